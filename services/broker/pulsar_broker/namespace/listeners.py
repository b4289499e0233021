"""Advertised listeners (PIP-61): one broker reached under several names.

broker.conf `advertisedListeners=internal:pulsar://host:6650,external:pulsar://ext:16650`
names the addresses a broker is reachable at; a client picks one with its
`listenerName` (binary LOOKUP's advertised_listener_name, the HTTP lookup's
`listenerName` parameter or `X-Pulsar-ListenerName` header). The listener named by
`internalListenerName` (the first one by default) is what lookups without a name
answer. A broker publishes its listeners with its registration and in each
ownership key, so any broker can answer for the bundles of another.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulsar_common import errors as common_errors

from pulsar_broker import errors

PLAIN_SCHEME = "pulsar"
TLS_SCHEME = "pulsar+ssl"


@dataclasses.dataclass(frozen=True)
class AdvertisedListener:
    name: str
    broker_service_url: str | None = None
    broker_service_url_tls: str | None = None


class ListenerNotFoundError(errors.BrokerError):
    """A lookup named a listener the serving broker does not advertise. Apache answers
    the binary lookup with ServiceNotReady and this message."""

    def __init__(self, name: str) -> None:
        super().__init__(f"the broker do not have {name} listener")


def parse(text: str) -> tuple[AdvertisedListener, ...]:
    """`name:url,name:url,...`: per name at most one pulsar:// and one pulsar+ssl:// URL,
    in the order the names first appear. Raises ConfigError."""
    urls: dict[str, dict[str, str]] = {}
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        name, sep, url = entry.partition(":")
        scheme = url.partition("://")[0]
        if not sep or not name or "://" not in url:
            raise common_errors.ConfigError(
                f"advertisedListeners entry {entry!r} is not <name>:<scheme>://<host>:<port>")
        if scheme not in (PLAIN_SCHEME, TLS_SCHEME):
            raise common_errors.ConfigError(
                f"advertisedListeners: listener {name} has an unsupported scheme {scheme}://")
        by_scheme = urls.setdefault(name, {})
        if scheme in by_scheme:
            raise common_errors.ConfigError(
                f"advertisedListeners: listener {name} has two {scheme}:// URLs")
        by_scheme[scheme] = url
    return tuple(AdvertisedListener(name, found.get(PLAIN_SCHEME), found.get(TLS_SCHEME))
                 for name, found in urls.items())


def internal(listeners: tuple[AdvertisedListener, ...],
             internal_name: str) -> AdvertisedListener | None:
    """The listener other brokers and unnamed lookups use; None without listeners.
    Raises ConfigError when internalListenerName names none of them, or the internal one
    has no pulsar:// URL (the broker's own service URL)."""
    if not listeners:
        if internal_name:
            raise common_errors.ConfigError("internalListenerName is set but advertisedListeners "
                                            "is empty")
        return None
    name = internal_name or listeners[0].name
    for listener in listeners:
        if listener.name == name:
            if listener.broker_service_url is None:
                raise common_errors.ConfigError(
                    f"the internal listener {name} needs a pulsar:// URL")
            return listener
    raise common_errors.ConfigError(
        f"advertisedListeners has no entry for internalListenerName {name}")


def select(listeners: tuple[AdvertisedListener, ...], name: str) -> AdvertisedListener:
    """The broker's listener called name; ListenerNotFoundError when it has none."""
    for listener in listeners:
        if listener.name == name:
            return listener
    raise ListenerNotFoundError(name)


def to_json(listeners: tuple[AdvertisedListener, ...]) -> dict[str, Any]:
    """Apache's `advertisedListeners` map of a registration or ownership record."""
    return {listener.name: {"brokerServiceUrl": listener.broker_service_url,
                            "brokerServiceUrlTls": listener.broker_service_url_tls}
            for listener in listeners}


def from_json(value: dict[str, Any] | None) -> tuple[AdvertisedListener, ...]:
    return tuple(AdvertisedListener(name, urls.get("brokerServiceUrl"),
                                    urls.get("brokerServiceUrlTls"))
                 for name, urls in (value or {}).items())
