"""Errors of the proxy, under one root."""

from __future__ import annotations

from pulsar_common import errors


class ProxyError(errors.PulsarError):
    pass


class TargetNotAllowedError(ProxyError):
    """A client asked to be relayed to an address that is not a broker the proxy may reach."""


class BrokerUnavailableError(ProxyError):
    """No broker could be reached (none registered, or the connection failed or timed out)."""

    retriable = True
