"""`pulsar proxy`: the proxy's listeners, its broker discovery and what they share.

Stateless: everything it knows of the cluster comes from the brokers it
reaches (fixed URLs) or their registrations in the metadata store.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from aiohttp import web
from prometheus_client import registry
from pulsar_common.metadata import api as md
from pulsar_common.metadata import factory as md_factory

from pulsar_proxy import broker_client, connection, discovery, lookups, stats
from pulsar_proxy import web as proxy_web
from pulsar_proxy.config import ProxyConfig

log = logging.getLogger(__name__)


class ProxyService:
    def __init__(self, conf: ProxyConfig) -> None:
        self.conf = conf
        self.stats = stats.ProxyStats()
        self._pool = broker_client.BrokerClientPool(
            conf.lookup_timeout_ms / 1000, conf.max_message_size + 64 * 1024)
        self._use_store(None)
        self._per_host: dict[str, int] = {}
        self._server: asyncio.Server | None = None
        self._web_runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None

    def _use_store(self, store: md.MetadataStore | None) -> None:
        self.store = store
        self.discovery = discovery.BrokerDiscovery(self.conf, store)
        self.lookups = lookups.LookupProxy(self.discovery, self._pool,
                                           self.conf.max_concurrent_lookup_requests, self.stats)

    # Connection limits

    def admit(self, cnx: connection.ProxyConnection) -> bool:
        """Count a new client connection in; False when a limit says it must be closed."""
        per_ip = self.conf.max_concurrent_inbound_connections_per_ip
        if (self.stats.active_connections >= self.conf.max_concurrent_inbound_connections
                or (per_ip > 0 and self._per_host.get(cnx.remote_host, 0) >= per_ip)):
            self.stats.rejected_connections += 1
            return False
        self.stats.active_connections += 1
        self.stats.new_connections += 1
        self._per_host[cnx.remote_host] = self._per_host.get(cnx.remote_host, 0) + 1
        return True

    def release(self, cnx: connection.ProxyConnection) -> None:
        self.stats.active_connections -= 1
        left = self._per_host.get(cnx.remote_host, 1) - 1
        if left:
            self._per_host[cnx.remote_host] = left
        else:
            self._per_host.pop(cnx.remote_host, None)

    def http(self) -> aiohttp.ClientSession:
        if self._http is None:
            self._http = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=self.conf.lookup_timeout_ms / 1000))
        return self._http

    # Lifecycle

    async def start(self) -> None:
        conf = self.conf
        if not conf.broker_service_url or not conf.broker_web_service_url:
            self._use_store(await md_factory.create_store(
                conf.metadata_store_url,
                session_timeout_s=conf.metadata_store_session_timeout_millis / 1000))
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: connection.ProxyConnection(self), conf.bind_address, conf.service_port,
            reuse_address=True)
        metrics = registry.CollectorRegistry(auto_describe=True)
        metrics.register(stats.ProxyStatsCollector(self.stats))
        self._web_runner = web.AppRunner(proxy_web.create_app(self, metrics), access_log=None)
        await self._web_runner.setup()
        await web.TCPSite(self._web_runner, conf.bind_address, conf.web_service_port,
                          reuse_address=True).start()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._web_runner is not None:
            await self._web_runner.cleanup()
        await self._pool.close()
        if self._http is not None:
            await self._http.close()
        if self.store is not None:
            await self.store.close()

    def banner(self) -> str:
        conf = self.conf
        host = conf.advertised_address or conf.bind_address
        source = (f"brokers at {conf.broker_service_url}" if conf.broker_service_url
                  else f"brokers registered in {conf.metadata_store_url}")
        return (f"pulsar proxy: pulsar://{host}:{conf.service_port} "
                f"http://{host}:{conf.web_service_port} ({source})")


async def run(conf: ProxyConfig) -> None:
    from pulsar_common import lifecycle

    service = ProxyService(conf)

    async def start() -> str:
        await service.start()
        return service.banner()

    await lifecycle.run_until_signalled(start, service.stop)

