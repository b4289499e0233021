"""`pulsar broker`: a broker of a cluster, with metadata in etcd and ledgers on remote bookies.

Ledgers are written through the replicated ledger client with the ensemble
and quorums of managedLedgerDefaultEnsembleSize / WriteQuorum / AckQuorum, on
bookies found through their registrations in the metadata store. On restart
the topics' open ledgers are recovered (fenced, closed) and writing continues
in new ledgers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.client.replicated import placement
from pulsar_bookie.net import client as bookie_net
from pulsar_bookie.service import registration
from pulsar_common import config as common_config
from pulsar_common import errors as common_errors
from pulsar_common import lifecycle
from pulsar_common.metadata import api as md
from pulsar_common.metadata import etcd_tls
from pulsar_common.metadata import factory as md_factory

from pulsar_broker import config as broker_config
from pulsar_broker import listeners, resources
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.managed_ledger import factory as ml_factory
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import broker_http

log = logging.getLogger(__name__)


class RegisteredBookies(placement.BookieSource):
    """Bookies as their registrations in the metadata store describe them."""

    def __init__(self, store: md.MetadataStore) -> None:
        self._store = store

    async def bookies(self) -> list[placement.BookieInfo]:
        return [placement.BookieInfo(b.bookie_id, b.rack, b.writable)
                for b in await registration.list_bookies(self._store)]


@dataclasses.dataclass(frozen=True)
class BrokerSettings:
    broker: broker_config.BrokerConfig
    managed_ledger: ml_config.ManagedLedgerConfig


def load_settings(config_path: str | None, overrides: dict[str, str]) -> BrokerSettings:
    broker, managed = common_config.load_many(
        [broker_config.BrokerConfig, ml_config.ManagedLedgerConfig], config_path, overrides)
    if not broker.metadata_store_url:
        raise common_errors.ConfigError("metadataStoreUrl is required for `pulsar broker`")
    return BrokerSettings(broker, managed)


class ClusterBroker:
    def __init__(self, settings: BrokerSettings) -> None:
        self.settings = settings
        self.store: md.MetadataStore | None = None
        self.pool: bookie_net.BookieClientPool | None = None
        self.service: BrokerService | None = None
        self.listeners: listeners.BrokerListeners | None = None

    async def start(self) -> None:
        conf = self.settings.broker
        self.store = await md_factory.create_store(
            conf.metadata_store_url,
            session_timeout_s=conf.metadata_store_session_timeout_millis / 1000.0,
            tls=etcd_tls.read_config(conf.metadata_store_config_path))
        self.pool = bookie_net.BookieClientPool(ssl_context=conf.bookie_tls_context())
        ledger_client = replicated.ReplicatedLedgerClient(
            self.store, self.pool, RegisteredBookies(self.store))
        ledgers = ml_factory.ManagedLedgerFactoryImpl(
            self.store, ledger_client, self.settings.managed_ledger)
        self.service = BrokerService(conf, resources.PulsarResources(self.store), ledgers,
                                     ledger_client, broker_http=broker_http.for_broker(conf))
        self.listeners = listeners.BrokerListeners(self.service)
        await self.listeners.start()

    async def stop(self) -> None:
        if self.listeners is not None:
            await self.listeners.stop()
        if self.pool is not None:
            await self.pool.close()
        if self.store is not None:
            await self.store.close()


async def initialize_cluster_metadata(metadata_url: str, cluster: str, web_service_url: str,
                                      broker_service_url: str) -> None:
    """What `pulsar initialize-cluster-metadata` does: the cluster record, tenant `public`
    with namespace `public/default`, and `pulsar/system`. Existing records are kept."""
    from pulsar_broker import standalone

    store = await md_factory.create_store(metadata_url)
    try:
        res = resources.PulsarResources(store)
        conf = broker_config.BrokerConfig(cluster_name=cluster)
        await standalone.create_cluster_records(res, conf, web_service_url, broker_service_url)
    finally:
        await store.close()


async def run(settings: BrokerSettings) -> None:
    broker = ClusterBroker(settings)

    async def start() -> str:
        await broker.start()
        assert broker.service is not None
        return f"pulsar broker: {broker.service.broker_service_url} {broker.service.web_service_url}"

    await lifecycle.run_until_signalled(start, broker.stop)


def main(args: Any) -> int:
    overrides = common_config.parse_overrides(args.conf or [])
    settings = load_settings(args.config, overrides)
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    asyncio.run(run(settings))
    return 0
