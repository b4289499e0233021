"""How the namespace service reaches other brokers over HTTP: a port the web layer fills.

An admin request for a bundle another broker owns is forwarded to that
broker, and a bundle offered to another broker is handed over by an
authoritative lookup there. The namespace service needs only a status and a
body back, so it asks through `BrokerHttp`; the HTTP client itself
(`pulsar_broker.web.broker_http`, over aiohttp) is injected, which keeps
adapter libraries out of namespace/ and lets a test answer in its place.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol

from pulsar_broker import errors

#: How long a broker waits for another broker's answer (a forwarded request or a lookup).
FORWARD_TIMEOUT_S = 10.0


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    status: int
    body: bytes


class BrokerUnreachableError(errors.BrokerError):
    """The other broker gave no answer: refused, reset or timed out (`cause` says which)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(repr(cause))
        self.cause = cause


class BrokerHttp(Protocol):
    """HTTP requests to other brokers, with this broker's brokerClient credentials."""

    async def request(self, method: str, url: str, *, body: bytes | None = None,
                      params: Mapping[str, str] | None = None,
                      follow_redirects: bool = True) -> Reply:
        """The answer to one request (a body is sent as JSON), within FORWARD_TIMEOUT_S;
        raises BrokerUnreachableError when there is none."""
        ...

    async def close(self) -> None:
        ...
