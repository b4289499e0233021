"""The broker's listeners (binary protocol and HTTP), shared by `pulsar standalone` and
`pulsar broker`."""

from __future__ import annotations

import asyncio

from aiohttp import web as aiohttp_web

from pulsar_broker.server import connection
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import app as web_app
from pulsar_broker.web import http_limits


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
                                                 access_log=None,
                                                 **http_limits.runner_settings(conf))
        await self._web_runner.setup()
        await http_limits.LimitedTCPSite(self._web_runner, conf.bind_address,
                                         conf.web_service_port,
                                         conf.max_http_server_connections).start()

    async def stop(self) -> None:
        """Stop listening, then close the topics (their ledgers and cursors)."""
        if self._server is not None:
            self._server.close()
        if self._web_runner is not None:
            await self._web_runner.cleanup()
        await self.service.close()
