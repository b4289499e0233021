"""The broker's listeners (binary protocol and HTTP) and the signal-driven run loop shared by
`pulsar standalone` and `pulsar broker`."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Awaitable, Callable

from aiohttp import web as aiohttp_web

from pulsar_broker.server import connection
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import app as web_app

log = logging.getLogger(__name__)


class BrokerListeners:
    """Binary protocol on brokerServicePort, admin REST / lookup / metrics on webServicePort.
    The web listener starts last, so both ports answering means the broker is ready."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self._server: asyncio.Server | None = None
        self._web_runner: aiohttp_web.AppRunner | None = None

    async def start(self) -> None:
        conf = self.service.config
        await self.service.start()
        self._server = await connection.start_server(
            self.service, conf.bind_address, conf.broker_service_port)
        self._web_runner = aiohttp_web.AppRunner(web_app.create_app(self.service),
                                                 access_log=None)
        await self._web_runner.setup()
        await aiohttp_web.TCPSite(self._web_runner, conf.bind_address, conf.web_service_port,
                                  reuse_address=True).start()

    async def stop(self) -> None:
        """Stop listening, then close the topics (their ledgers and cursors)."""
        if self._server is not None:
            self._server.close()
        if self._web_runner is not None:
            await self._web_runner.cleanup()
        await self.service.close()


async def run_until_signalled(start: Callable[[], Awaitable[str]],
                              stop: Callable[[], Awaitable[None]]) -> None:
    """start(), print its banner, wait for SIGTERM or SIGINT, then stop() (also on failure)."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    try:
        print(await start(), flush=True)
        await stopping.wait()
        log.info("shutting down")
    finally:
        await stop()
