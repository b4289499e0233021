"""Bounds on the HTTP listener: connections held, requests handled at once, idle time.

* `maxHttpServerConnections`: a connection accepted beyond it is closed at
  once (`LimitedTCPSite`), so idle or slow clients cannot use up the
  process's file descriptors.
* `httpServerIdleTimeoutMillis`: aiohttp's keep-alive timer, which also runs
  from the moment a connection opens, closes a connection that has no
  complete request for that long: idle ones and ones that send their headers
  a byte at a time. A request body must arrive within it too (`read_body`).
* `maxConcurrentHttpRequests`: requests beyond it wait for a slot
  (`concurrency_middleware`), as Jetty's QoSFilter makes them wait in Apache.
* `httpMaxRequestHeaderSize`: aiohttp's line and field size limits (400).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from pulsar_broker.config import BrokerConfig

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def runner_settings(conf: BrokerConfig) -> dict[str, Any]:
    """Keyword arguments of aiohttp's AppRunner (its request handlers) for conf."""
    return {
        "keepalive_timeout": conf.http_server_idle_timeout_millis / 1000,
        "max_line_size": conf.http_max_request_header_size,
        "max_field_size": conf.http_max_request_header_size,
    }


def concurrency_middleware(conf: BrokerConfig) -> Middleware | None:
    """A middleware that lets maxConcurrentHttpRequests requests run at once (None: no limit)."""
    if conf.max_concurrent_http_requests <= 0:
        return None
    slots = asyncio.Semaphore(conf.max_concurrent_http_requests)

    @web.middleware
    async def one_of_the_concurrent_requests(request: web.Request,
                                             handler: Handler) -> web.StreamResponse:
        async with slots:
            return await handler(request)

    return one_of_the_concurrent_requests


async def read_body(request: web.Request, timeout_s: float) -> bytes:
    """The request's body, which must arrive within timeout_s (408 otherwise)."""
    try:
        async with asyncio.timeout(timeout_s):
            return await request.read()
    except TimeoutError as exc:
        raise web.HTTPRequestTimeout(reason="Request body not received in time") from exc


class _Refused(asyncio.Protocol):
    """A connection over the limit: closed as soon as it is made."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()


class LimitedTCPSite(web.BaseSite):
    """aiohttp's TCPSite, holding at most max_connections connections at once (0: no limit)."""

    def __init__(self, runner: web.BaseRunner, host: str, port: int,
                 max_connections: int, ssl_context: ssl.SSLContext | None = None) -> None:
        super().__init__(runner, ssl_context=ssl_context)
        self._host = host
        self._port = port
        self.max_connections = max_connections
        #: Connections closed at once because the listener held max_connections.
        self.refused = 0

    @property
    def name(self) -> str:
        scheme = "http" if self._ssl_context is None else "https"
        return f"{scheme}://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        self._server = await asyncio.get_running_loop().create_server(
            lambda: self._admit(server), self._host, self._port, reuse_address=True,
            ssl=self._ssl_context)

    def _admit(self, server: web.Server) -> asyncio.Protocol:
        # The server lists every connection from connection_made to connection_lost.
        if self.max_connections and len(server.connections) >= self.max_connections:
            self.refused += 1
            log.warning("closing a new HTTP connection: reached the maximum number of "
                        "connections (%d)", self.max_connections)
            return _Refused()
        return server()
