"""`pulsar standalone`: metadata store, one bookie and one broker in a single process.

Data lives under --data-dir: `metadata/` (embedded RocksDB unless
metadataStoreUrl names etcd), `bookkeeper/journal` and `bookkeeper/ledgers`.
On first start it creates cluster `standalone`, tenants `public` and `pulsar`
and namespaces `public/default` and `pulsar/system`, as Apache's does.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import pathlib
import shutil
from typing import Any

from pulsar_bookie import config as bookie_config
from pulsar_bookie import types as bookie_types
from pulsar_bookie.client import local as local_client
from pulsar_bookie.net import server as bookie_server
from pulsar_bookie.service import bookie as bookie_service
from pulsar_bookie.storage import engine as bookie_engine
from pulsar_common import config as common_config
from pulsar_common import lifecycle, naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import etcd_tls
from pulsar_common.metadata import factory as md_factory

from pulsar_broker import config as broker_config
from pulsar_broker import errors, listeners, resources
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.managed_ledger import factory as ml_factory
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import broker_http

log = logging.getLogger(__name__)

STANDALONE_NAMESPACES = ("public/default", "pulsar/system")
#: What --wipe-data deletes: the standalone's own directories under --data-dir, nothing else.
WIPED_SUBDIRECTORIES = ("metadata", "bookkeeper", "functions")


@dataclasses.dataclass(frozen=True)
class StandaloneSettings:
    broker: broker_config.BrokerConfig
    managed_ledger: ml_config.ManagedLedgerConfig
    bookie: bookie_config.BookieConfig


def load_settings(data_dir: pathlib.Path, config_path: str | None,
                  overrides: dict[str, str]) -> StandaloneSettings:
    """Broker, managed-ledger and bookie keys all come from the one file and overrides."""
    bookie_defaults = {
        "journalDirectories": str(data_dir / "bookkeeper" / "journal"),
        "ledgerDirectories": str(data_dir / "bookkeeper" / "ledgers"),
    }
    broker, managed, bookie = common_config.load_many(
        [broker_config.BrokerConfig, ml_config.ManagedLedgerConfig, bookie_config.BookieConfig],
        config_path, {**bookie_defaults, **overrides},
    )
    return StandaloneSettings(broker, managed, bookie)


async def initialize_cluster_metadata(res: resources.PulsarResources,
                                      conf: broker_config.BrokerConfig) -> None:
    """Create the standalone cluster, tenants and namespaces unless they exist."""
    urls = conf.service_urls()
    await create_cluster_records(res, conf, urls.web_service_url, urls.broker_service_url,
                                 tls_urls=urls)


async def create_cluster_records(res: resources.PulsarResources, conf: broker_config.BrokerConfig,
                                 web_service_url: str, broker_service_url: str, *,
                                 tls_urls: broker_config.ServiceUrls | None = None) -> None:
    cluster = {"serviceUrl": web_service_url, "brokerServiceUrl": broker_service_url}
    if tls_urls is not None:
        # Apache's ClusterData TLS fields, set when the broker has TLS ports.
        cluster.update({key: value for key, value in (
            ("serviceUrlTls", tls_urls.web_service_url_tls),
            ("brokerServiceUrlTls", tls_urls.broker_service_url_tls)) if value})
    with contextlib.suppress(errors.ConflictError):
        await res.create_cluster(conf.cluster_name, cluster)
    for ns_text in STANDALONE_NAMESPACES:
        ns = naming.NamespaceName.parse(ns_text)
        with contextlib.suppress(errors.ConflictError):
            await res.create_tenant(ns.tenant, {"adminRoles": [],
                                                "allowedClusters": [conf.cluster_name]})
        with contextlib.suppress(errors.ConflictError):
            policies = resources.default_policies()
            policies["replication_clusters"] = [conf.cluster_name]
            await res.create_namespace(ns, policies)


class Standalone:
    """The running pieces, started in dependency order and stopped in reverse."""

    def __init__(self, data_dir: pathlib.Path, settings: StandaloneSettings, *,
                 functions_worker: bool = True) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.functions_worker = functions_worker
        self.worker: Any = None
        self.store: md.MetadataStore | None = None
        self.bookie: bookie_engine.LedgerStorageEngine | None = None
        self.bookie_server: bookie_server.BookieServer | None = None
        self.ledger_client: local_client.LocalLedgerClient | None = None
        self.service: BrokerService | None = None
        self.listeners: listeners.BrokerListeners | None = None

    async def start(self) -> None:
        conf = self.settings.broker
        self.data_dir.mkdir(parents=True, exist_ok=True)
        url = conf.metadata_store_url or f"rocksdb:{self.data_dir / 'metadata'}"
        self.store = await md_factory.create_store(
            url, tls=etcd_tls.read_config(conf.metadata_store_config_path))
        self.bookie = bookie_engine.LedgerStorageEngine(self.settings.bookie)
        await self.bookie.start()
        # The embedded bookie also listens on bookiePort, so that readers such as the
        # Spark data source fetch entries straight from storage, as they do in a cluster.
        self.bookie_server = bookie_server.BookieServer(
            self.bookie, bookie_service.server_settings(self.settings.bookie))
        await self.bookie_server.start(conf.bind_address, self.settings.bookie.bookiePort)
        bookie_id = bookie_types.BookieId(f"{conf.advertised_address}:{self.settings.bookie.bookiePort}")
        self.ledger_client = local_client.LocalLedgerClient(self.bookie, self.store, bookie_id)
        ledgers = ml_factory.ManagedLedgerFactoryImpl(
            self.store, self.ledger_client, self.settings.managed_ledger)
        res = resources.PulsarResources(self.store)
        await initialize_cluster_metadata(res, conf)
        self.service = BrokerService(conf, res, ledgers, self.ledger_client,
                                     broker_http=broker_http.for_broker(conf))
        self.listeners = listeners.BrokerListeners(self.service)
        await self.listeners.start()
        if self.functions_worker:
            await self._start_functions_worker()
        log.info("pulsar standalone ready: %s %s", self.service.broker_service_url,
                 self.service.web_service_url)

    async def _start_functions_worker(self) -> None:
        """A functions worker over this standalone's metadata store, as Apache's standalone
        runs one; the broker's web port forwards /admin/v3/functions to it."""
        assert self.service is not None and self.store is not None
        try:
            import pulsar  # noqa: F401 - function instances run on the official client
        except ImportError:
            log.warning("no functions worker: the official client wheel is missing "
                        "(pip install 'pulsar-py[functions]')")
            return
        from pulsar_functions.worker import config as worker_config
        from pulsar_functions.worker import server

        conf = self.settings.broker
        if conf.authentication_enabled and not conf.broker_client_authentication_plugin:
            log.warning("authenticationEnabled without brokerClientAuthenticationPlugin: the "
                        "functions worker and its instances cannot authenticate to the broker")
        # As Apache's standalone derives its worker's config from the broker's: the same
        # authentication and authorization of REST calls, and the broker's own client
        # credentials (brokerClientAuthentication*) for the worker and its instances.
        self.worker = server.WorkerServer(worker_config.WorkerConfig(
            worker_hostname=conf.advertised_address, worker_port=0,
            bind_address=conf.bind_address, cluster=conf.cluster_name,
            pulsar_service_url=self.service.broker_service_url,
            pulsar_web_service_url=self.service.web_service_url,
            data_dir=str(self.data_dir / "functions"),
            authentication_enabled=conf.authentication_enabled,
            authentication_providers=conf.authentication_providers,
            authorization_enabled=conf.authorization_enabled,
            super_user_roles=conf.super_user_roles, proxy_roles=conf.proxy_roles,
            anonymous_user_role=conf.anonymous_user_role,
            token_secret_key=conf.token_secret_key, token_public_key=conf.token_public_key,
            token_public_alg=conf.token_public_alg, token_auth_claim=conf.token_auth_claim,
            token_audience_claim=conf.token_audience_claim, token_audience=conf.token_audience,
            basic_auth_conf=conf.basic_auth_conf,
            broker_client_authentication_plugin=conf.broker_client_authentication_plugin,
            broker_client_authentication_parameters=(
                conf.broker_client_authentication_parameters),
            tls_trust_certs_file_path=conf.tls_trust_certs_file_path,
            tls_allow_insecure_connection=conf.tls_allow_insecure_connection), self.store)
        await self.worker.start()

    async def stop(self) -> None:
        if self.worker is not None:
            await self.worker.stop()
        if self.listeners is not None:
            await self.listeners.stop()
        if self.ledger_client is not None:
            await self.ledger_client.close()
        if self.bookie_server is not None:
            await self.bookie_server.stop()
        if self.bookie is not None:
            await self.bookie.close()
        if self.store is not None:
            await self.store.close()


async def run(data_dir: pathlib.Path, settings: StandaloneSettings, *,
              functions_worker: bool = True) -> None:
    standalone = Standalone(data_dir, settings, functions_worker=functions_worker)

    async def start() -> str:
        await standalone.start()
        assert standalone.service is not None
        return (f"pulsar standalone: broker {standalone.service.broker_service_url}, "
                f"web {standalone.service.web_service_url}, data {data_dir}")

    await lifecycle.run_until_signalled(start, standalone.stop)


def wipe_data(data_dir: pathlib.Path) -> list[pathlib.Path]:
    """Delete what earlier runs stored under data_dir (Apache's --wipe-data); the removed paths."""
    removed = []
    for name in WIPED_SUBDIRECTORIES:
        path = data_dir / name
        if path.exists():
            shutil.rmtree(path)
            removed.append(path)
    return removed


def command_line_overrides(args: Any) -> dict[str, str]:
    """Settings that Apache's standalone takes as flags; --conf given explicitly wins."""
    overrides: dict[str, str] = {}
    if args.metadata_url:
        overrides["metadataStoreUrl"] = args.metadata_url
    if getattr(args, "advertised_address", None):
        overrides["advertisedAddress"] = args.advertised_address
    if getattr(args, "bookkeeper_port", None) is not None:
        overrides["bookiePort"] = str(args.bookkeeper_port)
    overrides.update(common_config.parse_overrides(args.conf or []))
    return overrides


def main(args: Any) -> int:
    data_dir = pathlib.Path(args.data_dir).resolve()
    if getattr(args, "wipe_data", False):
        for path in wipe_data(data_dir):
            log.info("--wipe-data: removed %s", path)
    settings = load_settings(data_dir, args.config, command_line_overrides(args))
    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass
    asyncio.run(run(data_dir, settings, functions_worker=not args.no_functions_worker))
    return 0
