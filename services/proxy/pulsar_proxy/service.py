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
from pulsar_common import process_metrics, tls
from pulsar_common.metadata import api as md
from pulsar_common.metadata import etcd_tls
from pulsar_common.metadata import factory as md_factory
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_proxy import broker_client, connection, discovery, identity, lookups, stats
from pulsar_proxy import web as proxy_web
from pulsar_proxy.config import ProxyConfig

log = logging.getLogger(__name__)


class ProxyService:
    def __init__(self, conf: ProxyConfig) -> None:
        self.conf = conf
        self.stats = stats.ProxyStats()
        self.identity = identity.ProxyIdentity(conf)
        #: TLS towards brokers (tlsEnabledWithBroker), None without.
        self.broker_ssl_context = (tls.client_context(conf.broker_tls)
                                   if conf.tls_enabled_with_broker else None)
        self._pool = self.broker_pool(self.identity.own_connect())
        self._use_store(None)
        self._per_host: dict[str, int] = {}
        self._servers: list[asyncio.Server] = []
        self._web_runner: web.AppRunner | None = None
        self._http: aiohttp.ClientSession | None = None
        #: The client-facing TLS ports' certificate, None without TLS ports.
        self.certificates: tls.CertificateReloader | None = None

    def broker_pool(self, connect: pb.CommandConnect) -> broker_client.BrokerClientPool:
        """Connections to brokers that open with connect (see identity.py)."""
        return broker_client.BrokerClientPool(
            self.conf.lookup_timeout_ms / 1000, self.conf.max_message_size + 64 * 1024,
            self.broker_ssl_context, connect)

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
            connector = (None if self.broker_ssl_context is None
                         else aiohttp.TCPConnector(ssl=self.broker_ssl_context))
            self._http = aiohttp.ClientSession(
                connector=connector,
                timeout=aiohttp.ClientTimeout(total=self.conf.lookup_timeout_ms / 1000))
        return self._http

    # Lifecycle

    async def start(self) -> None:
        conf = self.conf
        if not conf.fixed_brokers or not conf.fixed_web_brokers:
            self._use_store(await md_factory.create_store(
                conf.metadata_store_url,
                session_timeout_s=conf.metadata_store_session_timeout_millis / 1000,
                tls=etcd_tls.read_config(conf.metadata_store_config_path)))
        if conf.tls_enabled:
            self.certificates = tls.CertificateReloader(
                conf.tls, conf.tls_cert_refresh_check_duration_sec)
        context = None if self.certificates is None else self.certificates.context
        loop = asyncio.get_running_loop()
        for port, ssl_context in ((conf.service_port, None), (conf.service_port_tls, context)):
            if port is not None:
                self._servers.append(await loop.create_server(
                    lambda: connection.ProxyConnection(self), conf.bind_address, port,
                    reuse_address=True, ssl=ssl_context))
        metrics = registry.CollectorRegistry(auto_describe=True)
        metrics.register(stats.ProxyStatsCollector(self.stats))
        process_metrics.register(metrics)
        self._web_runner = web.AppRunner(proxy_web.create_app(self, metrics), access_log=None)
        await self._web_runner.setup()
        # HTTPS first: a plain web port that answers means everything else is up.
        for port, ssl_context in ((conf.web_service_port_tls, context),
                                  (conf.web_service_port, None)):
            if port is not None:
                await web.TCPSite(self._web_runner, conf.bind_address, port,
                                  reuse_address=True, ssl_context=ssl_context).start()
        if self.certificates is not None:
            self.certificates.start()

    async def stop(self) -> None:
        if self.certificates is not None:
            await self.certificates.stop()
        for server in self._servers:
            server.close()
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
        fixed = conf.broker_service_url_tls if conf.tls_enabled_with_broker \
            else conf.broker_service_url
        source = (f"brokers at {fixed}" if conf.fixed_brokers
                  else f"brokers registered in {conf.metadata_store_url}")
        urls = [f"{scheme}://{host}:{port}" for scheme, port in (
            ("pulsar", conf.service_port), ("pulsar+ssl", conf.service_port_tls),
            ("http", conf.web_service_port), ("https", conf.web_service_port_tls))
            if port is not None]
        return f"pulsar proxy: {' '.join(urls)} ({source})"


async def run(conf: ProxyConfig) -> None:
    from pulsar_common import lifecycle

    service = ProxyService(conf)

    async def start() -> str:
        await service.start()
        return service.banner()

    await lifecycle.run_until_signalled(start, service.stop)

