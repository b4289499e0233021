"""The broker's listeners (binary protocol and HTTP, each plain and/or TLS), shared by
`pulsar standalone` and `pulsar broker`."""

from __future__ import annotations

import asyncio

from aiohttp import web as aiohttp_web
from pulsar_common import tls

from pulsar_broker.server import connection
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import app as web_app
from pulsar_broker.web import http_limits


class BrokerListeners:
    """Binary protocol on brokerServicePort and/or brokerServicePortTls; admin REST, lookup
    and metrics on webServicePort and/or webServicePortTls. The web listeners start last, so
    every port answering means the broker is ready. The TLS ports share one certificate,
    reloaded when its files change (tlsCertRefreshCheckDurationSec)."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self._servers: list[asyncio.Server] = []
        self._web_runner: aiohttp_web.AppRunner | None = None
        #: The TLS ports' certificate, None without TLS ports.
        self.certificates: tls.CertificateReloader | None = None

    async def start(self) -> None:
        conf = self.service.config
        if conf.tls_enabled:
            self.certificates = tls.CertificateReloader(
                conf.tls, conf.tls_cert_refresh_check_duration_sec)
        context = None if self.certificates is None else self.certificates.context
        await self.service.start()
        if conf.broker_service_port is not None:
            self._servers.append(await connection.start_server(
                self.service, conf.bind_address, conf.broker_service_port))
        if conf.broker_service_port_tls is not None:
            self._servers.append(await connection.start_server(
                self.service, conf.bind_address, conf.broker_service_port_tls, context))
        self._web_runner = aiohttp_web.AppRunner(web_app.create_app(self.service),
                                                 access_log=None,
                                                 **http_limits.runner_settings(conf))
        await self._web_runner.setup()
        # HTTPS first: a plain web port that answers means everything else is up.
        for port, ssl_context in ((conf.web_service_port_tls, context),
                                  (conf.web_service_port, None)):
            if port is not None:
                await http_limits.LimitedTCPSite(
                    self._web_runner, conf.bind_address, port,
                    conf.max_http_server_connections, ssl_context).start()
        if self.certificates is not None:
            self.certificates.start()

    async def stop(self) -> None:
        """Stop listening, then close the topics (their ledgers and cursors)."""
        if self.certificates is not None:
            await self.certificates.stop()
        for server in self._servers:
            server.close()
        if self._web_runner is not None:
            await self._web_runner.cleanup()
        await self.service.close()
