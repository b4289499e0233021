"""`pulsar standalone`: metadata store, one bookie and one broker in a single process.

Data lives under --data-dir: `metadata/` (embedded RocksDB unless
metadataStoreUrl names etcd), `bookkeeper/journal` and `bookkeeper/ledgers`.
On first start it creates cluster `standalone`, tenants `public` and `pulsar`
and namespaces `public/default` and `pulsar/system`, as Apache's does.

With standaloneBookieProcess=true (our key, not Apache's) the bookie runs as
a child process instead: the real `pulsar bookie` on bookiePort over the same
directories, reached through the networked ledger client as a cluster broker
reaches its bookies, so that the broker's event loop and the bookie's journal
and checksums run in two interpreters and can use two cores. The child dies
with the standalone (parent-death signal) and writes to the standalone's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import pathlib
import shutil
import signal
import sys
from collections.abc import Callable
from typing import Any

from pulsar_bookie import config as bookie_config
from pulsar_bookie import types as bookie_types
from pulsar_bookie.client import api as ledger_api
from pulsar_bookie.client import local as local_client
from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.net import client as bookie_net
from pulsar_bookie.net import server as bookie_server
from pulsar_bookie.service import bookie as bookie_service
from pulsar_bookie.service import registration
from pulsar_bookie.storage import engine as bookie_engine
from pulsar_common import backoff, lifecycle, naming, testing
from pulsar_common import config as common_config
from pulsar_common import errors as common_errors
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as metadata_errors
from pulsar_common.metadata import etcd_tls
from pulsar_common.metadata import factory as md_factory

from pulsar_broker import config as broker_config
from pulsar_broker import errors, listeners, resources
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.managed_ledger import factory as ml_factory
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import broker_http

log = logging.getLogger(__name__)

STANDALONE_NAMESPACES = ("public/default", naming.SYSTEM_NAMESPACE)
#: What --wipe-data deletes: the standalone's own directories under --data-dir, nothing else.
WIPED_SUBDIRECTORIES = ("metadata", "bookkeeper", "functions")


#: How long the bookie child may take to serve (a long journal is replayed first).
BOOKIE_PROCESS_START_TIMEOUT_S = 120.0
#: How long a stopping bookie child may take (it finishes requests, checkpoints).
BOOKIE_PROCESS_STOP_TIMEOUT_S = 20.0
#: Pauses between checks that the bookie child serves and is registered.
BOOKIE_PROCESS_POLL = backoff.BackoffPolicy(first_s=0.01, max_s=0.2)
#: The config file written for the bookie child, under --data-dir.
BOOKIE_PROCESS_CONFIG = pathlib.Path("bookkeeper") / "bookie-process.conf"


@dataclasses.dataclass(frozen=True)
class StandaloneOptions:
    """Settings of this standalone itself; Apache's standalone has no such keys."""

    bookie_process: bool = common_config.setting(
        "standaloneBookieProcess", False,
        "Run the bookie as a child process (`pulsar bookie` on bookiePort) reached over "
        "loopback, so that broker and bookie use a core each (ours, not an Apache key)")


@dataclasses.dataclass(frozen=True)
class StandaloneSettings:
    broker: broker_config.BrokerConfig
    managed_ledger: ml_config.ManagedLedgerConfig
    bookie: bookie_config.BookieConfig
    options: StandaloneOptions = StandaloneOptions()


def load_settings(data_dir: pathlib.Path, config_path: str | None,
                  overrides: dict[str, str]) -> StandaloneSettings:
    """Broker, managed-ledger and bookie keys all come from the one file and overrides."""
    bookie_defaults = {
        "journalDirectories": str(data_dir / "bookkeeper" / "journal"),
        "ledgerDirectories": str(data_dir / "bookkeeper" / "ledgers"),
    }
    broker, managed, bookie, options = common_config.load_many(
        [broker_config.BrokerConfig, ml_config.ManagedLedgerConfig, bookie_config.BookieConfig,
         StandaloneOptions],
        config_path, {**bookie_defaults, **overrides},
    )
    return StandaloneSettings(broker, managed, bookie, options)


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


def bookie_process_config(settings: StandaloneSettings, metadata_url: str,
                          ) -> bookie_config.BookieConfig:
    """The bookie child's settings: the standalone's bookie keys, on the broker's addresses
    with the in-process bookie's id (advertisedAddress:bookiePort, so that one data
    directory serves in either mode), registered in etcd when the metadata lives there, no
    HTTP endpoint (the in-process bookie has none either) and no autorecovery (one bookie
    has nothing to copy to)."""
    conf, bookie = settings.broker, settings.bookie
    if bookie.bookiePort == 0:
        raise common_errors.ConfigError(
            "standaloneBookieProcess needs a fixed bookiePort: ledgers name their bookie")
    on_etcd = metadata_url.startswith("etcd:")
    if on_etcd and conf.metadata_store_config_path:
        raise common_errors.ConfigError(
            "standaloneBookieProcess with metadataStoreConfigPath (etcd over TLS) is not "
            "supported: the bookie reaches etcd without those settings")
    return dataclasses.replace(
        bookie, advertisedAddress=conf.advertised_address, bookieBindAddress=conf.bind_address,
        bookieId="", metadataServiceUri=metadata_url if on_etcd else "", httpServerEnabled=False,
        autoRecoveryDaemonEnabled=False)


class BookieProcess:
    """`pulsar bookie` as a child of the standalone, registered in the standalone's store.

    On etcd the child registers itself, as any bookie does, and so also switches
    its registration to read-only and collects deleted ledgers. The embedded
    RocksDB store opens in one process only: there the child runs unregistered
    and the standalone registers it (available, never read-only) on its behalf,
    and the data of deleted ledgers is not reclaimed while in this mode.
    """

    def __init__(self, conf: bookie_config.BookieConfig, config_path: pathlib.Path,
                 store: md.MetadataStore) -> None:
        self.conf = conf
        self.config_path = config_path
        self.bookie_id = bookie_service.bookie_id_of(conf)
        self._store = store
        self._registration: registration.Registration | None = None
        self.process: asyncio.subprocess.Process | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def self_registered(self) -> bool:
        return bool(self.conf.metadataServiceUri)

    async def start(self, on_unexpected_exit: Callable[[], None]) -> None:
        """Start the child and return once it serves and is registered; on_unexpected_exit()
        is called if it later ends while the standalone has not asked it to."""
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(common_config.render(self.conf))
        argv = [sys.executable, "-m", "pulsar_common.cli.main", "bookie",
                "--config", str(self.config_path)]
        # SIGKILL when the standalone dies: a crash of the pair then looks like a crash of
        # the in-process bookie, and a restarted standalone finds the directories free.
        # The child inherits stdout and stderr: its lines go to the standalone's log.
        self.process = await asyncio.create_subprocess_exec(
            *testing.dying_with_parent(argv, "KILL"))
        log.info("bookie process %d started as %s", self.process.pid, self.bookie_id)
        await self._wait_serving()
        if not self.self_registered:
            self._registration = registration.Registration(self._store, registration.BookieInfo(
                bookie_id=self.bookie_id, state=registration.BookieState.AVAILABLE,
                address=self.bookie_id, rack=self.conf.rack))
            await self._registration.register()
        self._watcher = asyncio.get_running_loop().create_task(
            self._watch(on_unexpected_exit))

    async def _wait_serving(self) -> None:
        assert self.process is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + BOOKIE_PROCESS_START_TIMEOUT_S
        delays = BOOKIE_PROCESS_POLL.start()
        while not await self._serving():
            if self.process.returncode is not None:
                raise errors.ServiceNotReadyError(
                    f"the bookie process exited with {self.process.returncode} before serving")
            if loop.time() > deadline:
                raise errors.ServiceNotReadyError(
                    f"the bookie process did not serve within {BOOKIE_PROCESS_START_TIMEOUT_S}s")
            await asyncio.sleep(delays.next_delay())

    async def _serving(self) -> bool:
        """The port accepts and, for a self-registered child, its registration is there (a
        registration alone may be a crashed earlier run's, still in its etcd session)."""
        host, port = bookie_net.address_of(self.bookie_id)
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError:
            return False
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        if not self.self_registered:
            return True
        return await self._store.exists(registration.available_path(self.bookie_id))

    async def _watch(self, on_unexpected_exit: Callable[[], None]) -> None:
        assert self.process is not None
        code = await self.process.wait()
        if not self._stopping:
            log.error("the bookie process exited with %s: the standalone stops", code)
            on_unexpected_exit()

    async def stop(self) -> None:
        """SIGTERM (the bookie finishes its requests and checkpoints), SIGKILL if it lingers."""
        self._stopping = True
        if self._registration is not None:
            with contextlib.suppress(metadata_errors.MetadataStoreError):
                await self._registration.unregister()
        if self.process is None or self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), BOOKIE_PROCESS_STOP_TIMEOUT_S)
        except TimeoutError:
            log.warning("the bookie process did not stop in %ss: killing it",
                        BOOKIE_PROCESS_STOP_TIMEOUT_S)
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        if self._watcher is not None:
            await self._watcher


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
        self.bookie_process: BookieProcess | None = None
        self.bookie_pool: bookie_net.BookieClientPool | None = None
        self.ledger_client: ledger_api.LedgerClient | None = None
        self.service: BrokerService | None = None
        self.listeners: listeners.BrokerListeners | None = None
        #: Set when a part ended on its own (the bookie process): the standalone then stops.
        self.failed = asyncio.Event()

    async def start(self) -> None:
        conf = self.settings.broker
        self.data_dir.mkdir(parents=True, exist_ok=True)
        url = conf.metadata_store_url or f"rocksdb:{self.data_dir / 'metadata'}"
        self.store = await md_factory.create_store(
            url, tls=etcd_tls.read_config(conf.metadata_store_config_path))
        if self.settings.options.bookie_process:
            self.ledger_client = await self._start_bookie_process(url)
        else:
            self.ledger_client = await self._start_bookie_in_process()
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

    async def _start_bookie_in_process(self) -> ledger_api.LedgerClient:
        assert self.store is not None
        conf = self.settings.broker
        self.bookie = bookie_engine.LedgerStorageEngine(self.settings.bookie)
        await self.bookie.start()
        # The embedded bookie also listens on bookiePort, so that readers such as the
        # Spark data source fetch entries straight from storage, as they do in a cluster.
        self.bookie_server = bookie_server.BookieServer(
            self.bookie, bookie_service.server_settings(self.settings.bookie))
        await self.bookie_server.start(conf.bind_address, self.settings.bookie.bookiePort)
        bookie_id = bookie_types.BookieId(f"{conf.advertised_address}:{self.settings.bookie.bookiePort}")
        return local_client.LocalLedgerClient(self.bookie, self.store, bookie_id)

    async def _start_bookie_process(self, metadata_url: str) -> ledger_api.LedgerClient:
        """The bookie as a child process and the networked ledger client a cluster broker
        uses; with one bookie, every ledger has it as its whole ensemble (E=WQ=AQ=1)."""
        assert self.store is not None
        self.bookie_process = BookieProcess(
            bookie_process_config(self.settings, metadata_url),
            self.data_dir / BOOKIE_PROCESS_CONFIG, self.store)
        await self.bookie_process.start(self._part_failed)
        # TLS to the bookie as a cluster broker has it (bookkeeperTLS* keys), in case the
        # bookie keys turn TLS on for its port.
        self.bookie_pool = bookie_net.BookieClientPool(
            ssl_context=self.settings.broker.bookie_tls_context())
        return replicated.ReplicatedLedgerClient(
            self.store, self.bookie_pool, registration.RegisteredBookieSource(self.store))

    def _part_failed(self) -> None:
        """A part ended on its own: stop the whole standalone, through the same path as
        SIGTERM (lifecycle.run_until_signalled), and exit 1 (see main)."""
        self.failed.set()
        os.kill(os.getpid(), signal.SIGTERM)

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
        if self.bookie_pool is not None:
            await self.bookie_pool.close()
        if self.bookie_process is not None:
            await self.bookie_process.stop()
        if self.bookie_server is not None:
            await self.bookie_server.stop()
        if self.bookie is not None:
            await self.bookie.close()
        if self.store is not None:
            await self.store.close()


async def run(data_dir: pathlib.Path, settings: StandaloneSettings, *,
              functions_worker: bool = True) -> bool:
    """Serve until SIGTERM or SIGINT; False when it stopped because a part failed."""
    standalone = Standalone(data_dir, settings, functions_worker=functions_worker)

    async def start() -> str:
        await standalone.start()
        assert standalone.service is not None
        return (f"pulsar standalone: broker {standalone.service.broker_service_url}, "
                f"web {standalone.service.web_service_url}, data {data_dir}")

    await lifecycle.run_until_signalled(start, standalone.stop)
    return not standalone.failed.is_set()


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
    ok = asyncio.run(run(data_dir, settings, functions_worker=not args.no_functions_worker))
    return 0 if ok else 1
