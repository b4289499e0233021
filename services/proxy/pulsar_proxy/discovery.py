"""Which brokers the proxy talks to, and which relay targets a client may ask for.

Two sources, as in Apache's proxy: fixed URLs (`brokerServiceURL`,
`brokerWebServiceURL`, typically a Kubernetes Service over the brokers), or
the brokers' own registrations in the metadata store. Lookups and admin calls
go to one broker after another (round robin); the broker they reach finds the
topic's owner. A client's `proxy_to_broker_url` must pass the allowed ports and
host patterns, and with metadata discovery must name a registered broker, so
the proxy cannot be used to reach anything else.
"""

from __future__ import annotations

import fnmatch
import itertools
import time
import urllib.parse
from collections.abc import Callable

from pulsar_broker.namespace import ownership, registry
from pulsar_common.metadata import api as md

from pulsar_proxy import errors
from pulsar_proxy.config import ProxyConfig

#: How long a read of the brokers' registrations is reused before it is read again.
REGISTRATIONS_TTL_S = 1.0


def host_port(url: str) -> tuple[str, int]:
    """("host", port) of pulsar://host:port, http://host:port or host:port (the official
    clients send `proxy_to_broker_url` without a scheme); ValueError when malformed."""
    parsed = urllib.parse.urlsplit(url if "://" in url else f"pulsar://{url}")
    try:
        port = parsed.port
    except ValueError as exc:
        raise ValueError(f"bad port in {url!r}") from exc
    if parsed.scheme not in ("http", "https", "pulsar", "pulsar+ssl") or not parsed.hostname \
            or port is None or parsed.path not in ("", "/"):
        raise ValueError(f"not a host:port, pulsar(+ssl):// or http(s):// address: {url!r}")
    return parsed.hostname, port


def _first_host(url: str) -> str:
    """pulsar://a:1,b:2 -> pulsar://a:1 (a multi-host service URL names several brokers)."""
    scheme, _, hosts = url.partition("://")
    return f"{scheme}://{hosts.split(',')[0].rstrip('/')}"


class BrokerDiscovery:
    def __init__(self, conf: ProxyConfig, store: md.MetadataStore | None,
                 now_s: Callable[[], float] = time.monotonic) -> None:
        self._conf = conf
        self._store = store
        self._now_s = now_s
        self._cached: dict[str, ownership.BrokerUrls] = {}
        self._cached_at = float("-inf")
        self._turn = itertools.count()

    @property
    def static(self) -> bool:
        return self._conf.fixed_brokers

    async def brokers(self, *, fresh: bool = False) -> dict[str, ownership.BrokerUrls]:
        """Broker id -> URLs of the registered brokers (empty with fixed URLs)."""
        if self._store is None:
            return {}
        if fresh or self._now_s() - self._cached_at > REGISTRATIONS_TTL_S:
            self._cached = await registry.live_brokers(self._store)
            self._cached_at = self._now_s()
        return self._cached

    async def _next(self) -> ownership.BrokerUrls:
        live = sorted((await self.brokers()).values(), key=lambda b: b.native_url)
        if not live:
            live = sorted((await self.brokers(fresh=True)).values(), key=lambda b: b.native_url)
        if not live:
            raise errors.BrokerUnavailableError("no broker is registered in the metadata store")
        return live[next(self._turn) % len(live)]

    @property
    def tls(self) -> bool:
        """Whether brokers are reached on their TLS ports (tlsEnabledWithBroker)."""
        return self._conf.tls_enabled_with_broker

    async def lookup_url(self) -> str:
        """pulsar://host:port (pulsar+ssl:// with tlsEnabledWithBroker) of a broker to send a
        lookup to."""
        if self.static:
            return _first_host(self._conf.broker_service_url_tls if self.tls
                               else self._conf.broker_service_url)
        broker = await self._next()
        return native_url(broker, self.tls)

    async def web_url(self) -> str:
        """http(s)://host:port of a broker to send an admin or lookup request to."""
        fixed = (self._conf.broker_web_service_url_tls if self.tls
                 else self._conf.broker_web_service_url)
        if fixed:
            return _first_host(fixed)
        broker = await self._next()
        if self.tls:
            if broker.http_url_tls is None:
                raise errors.BrokerUnavailableError(
                    f"broker {broker.http_url} has no HTTPS port (tlsEnabledWithBroker)")
            return broker.http_url_tls
        return broker.http_url

    async def check_target(self, url: str) -> tuple[str, int]:
        """(host, port) of a relay target a client asked for; TargetNotAllowedError otherwise."""
        try:
            host, port = host_port(url)
        except ValueError as exc:
            raise errors.TargetNotAllowedError(str(exc)) from exc
        ports = self._conf.broker_proxy_allowed_target_ports
        if "*" not in ports and str(port) not in ports:
            raise errors.TargetNotAllowedError(
                f"port {port} of {url} is not in brokerProxyAllowedTargetPorts")
        patterns = self._conf.broker_proxy_allowed_host_names
        if not any(fnmatch.fnmatchcase(host.lower(), p.lower()) for p in patterns):
            raise errors.TargetNotAllowedError(
                f"host {host} of {url} is not in brokerProxyAllowedHostNames")
        if not self.static and not await self._registered(host, port):
            raise errors.TargetNotAllowedError(f"{url} is not a registered broker")
        return host, port

    async def _registered(self, host: str, port: int) -> bool:
        for fresh in (False, True):
            for broker in (await self.brokers(fresh=fresh)).values():
                urls = (broker.native_url, broker.native_url_tls)
                if any(url and host_port(url) == (host, port) for url in urls):
                    return True
        return False


def native_url(broker: ownership.BrokerUrls, use_tls: bool) -> str:
    """The broker's pulsar:// URL, or its pulsar+ssl:// one with use_tls."""
    if not use_tls:
        return broker.native_url
    if broker.native_url_tls is None:
        raise errors.BrokerUnavailableError(
            f"broker {broker.native_url} has no TLS port (tlsEnabledWithBroker)")
    return broker.native_url_tls
