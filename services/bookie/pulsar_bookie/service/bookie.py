"""One bookie: the storage engine served over TCP, registered in the metadata store, watched.

Start order: metadata store and cookie check -> engine (journal replay) ->
cookie recorded in metadata -> TCP server -> HTTP endpoint -> registration
-> disk monitor -> autorecovery daemon (autoRecoveryDaemonEnabled); only then
is the bookie ready. Stop order: not ready -> autorecovery -> stop accepting
and finish in-flight requests -> unregister -> HTTP -> engine (checkpoint)
-> metadata session. A bookie being decommissioned (a record under
/underreplication/decommissioning) starts read-only.

A journal write or sync that fails turns the bookie read-only at once (registration
too), so writers pick other bookies rather than one that fails every add. A
journal that failed for lack of space writes again, in a fresh file, once the
disk monitor sees every journal disk below diskUsageLwmThreshold; then the
bookie is writable again (if its ledger disks allow). A journal that failed with
any other error keeps the bookie read-only until it is restarted (its journal is
replayed then): the log says so and `/api/v1/bookie/state` shows
`journalError` and `restartRequired`.

Without metadataServiceUri the bookie runs unregistered (no cookie in
metadata, nobody can discover it): enough for local tests and tools that
address it by host:port.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import Any

from pulsar_common import backoff, tls
from pulsar_common import errors as common_errors
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import factory as metadata_factory
from pulsar_common.metadata import tasks as metadata_tasks

from pulsar_bookie import config as bookie_config
from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import admin as recovery_admin
from pulsar_bookie.autorecovery import service as recovery_service
from pulsar_bookie.autorecovery import underreplication
from pulsar_bookie.net import server as net_server
from pulsar_bookie.service import disk_monitor, http, ledger_gc, metrics, registration
from pulsar_bookie.storage import engine as storage_engine

log = logging.getLogger(__name__)

#: Waits between attempts to reach the metadata store while a bookie starts.
METADATA_START_RETRY = backoff.BackoffPolicy(first_s=0.1, max_s=2.0)

#: How long a stopping bookie lets in-flight requests finish.
SHUTDOWN_GRACE_S = 10.0


def bookie_id_of(conf: bookie_config.BookieConfig, port: int | None = None) -> types.BookieId:
    """bookieId if set, else advertisedAddress (or the host name) and the bookie port."""
    if conf.bookieId:
        return types.BookieId(conf.bookieId)
    host = conf.advertisedAddress or socket.gethostname()
    return types.BookieId(f"{host}:{port if port is not None else conf.bookiePort}")


def server_settings(conf: bookie_config.BookieConfig) -> net_server.ServerSettings:
    return net_server.ServerSettings(
        adds_in_progress_max=conf.maxPendingAddRequestsPerThread,
        reads_in_progress_max=conf.maxPendingReadRequestsPerThread * conf.numReadWorkerThreads,
        lac_waiters_max=conf.maxLongPollLacRequests,
        max_frame_bytes=conf.nettyMaxFrameSizeBytes,
    )


def tls_context(conf: bookie_config.BookieConfig) -> ssl.SSLContext | None:
    """The bookie port's TLS context when tlsProviderFactoryClass is set (PEM files only)."""
    if not conf.tlsProviderFactoryClass:
        return None
    if conf.tlsKeyStoreType.upper() != "PEM" or conf.tlsTrustStoreType.upper() != "PEM":
        raise common_errors.ConfigError("only tlsKeyStoreType=PEM and tlsTrustStoreType=PEM "
                                        "are supported")
    return tls.server_context(tls.TlsSettings(
        cert_file=conf.tlsCertificatePath, key_file=conf.tlsKeyStore,
        trust_certs_file=conf.tlsTrustStore,
        require_trusted_client_cert=conf.tlsClientAuthentication))


def validate(conf: bookie_config.BookieConfig) -> None:
    """Refuse service settings that cannot work (the engine checks its own)."""
    conf.validate()
    problems = []
    try:
        server_settings(conf).validate()
        disk_monitor.DiskThresholds(conf.diskUsageThreshold, conf.diskUsageLwmThreshold).validate()
    except ValueError as exc:
        problems.append(str(exc))
    if conf.diskCheckInterval <= 0 or conf.zkTimeout <= 0:
        problems.append("diskCheckInterval and zkTimeout must be positive")
    if conf.metadataServiceUri and conf.bookiePort == 0 and not conf.bookieId:
        problems.append("a registered bookie needs a fixed bookiePort (or a bookieId)")
    if problems:
        raise common_errors.ConfigError("; ".join(problems))


class BookieService(http.BookieAdmin):
    """A whole bookie in this process: `await start()`, serve, `await stop()`."""

    def __init__(
        self,
        conf: bookie_config.BookieConfig,
        *,
        disk_usage: disk_monitor.UsageProbe = disk_monitor.filesystem_usage,
    ) -> None:
        validate(conf)
        self.conf = conf
        self.engine = storage_engine.LedgerStorageEngine(conf)
        self.metrics = metrics.BookieMetrics(self._readings)
        self.server = net_server.BookieServer(
            self.engine, server_settings(conf), observer=self.metrics
        )
        self.monitor = disk_monitor.DiskMonitor(
            conf.ledgerDirectories,
            disk_monitor.DiskThresholds(conf.diskUsageThreshold, conf.diskUsageLwmThreshold),
            conf.diskCheckInterval / 1000.0,
            self._on_disk_change,
            probe=disk_usage,
            journal_directories=list(conf.journal_dirs),
            after_check=self._retry_journal,
        )
        self.http: http.HttpEndpoint | None = None
        self.store: metadata_api.MetadataStore | None = None
        self.registration: registration.Registration | None = None
        self.bookie_id = bookie_id_of(conf)
        self._forced_read_only = conf.forceReadOnlyBookie
        self._ready = False
        self._stopping = False
        #: Set when the bookie must end on its own (a full disk with readOnlyModeEnabled=false).
        self.terminated = asyncio.Event()
        self._ledger_gc: asyncio.Task[None] | None = None
        self._mode_changes: set[asyncio.Task[None]] = set()
        self._journal_failure_seen: BaseException | None = None
        self.autorecovery: recovery_service.AutoRecoveryService | None = None

    # ----- life cycle -----

    async def start(self) -> None:
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        conf = self.conf
        expected: str | None = None
        if conf.metadataServiceUri:
            expected = await self._metadata_at_start(conf)
            self.engine = storage_engine.LedgerStorageEngine(conf, expected_instance_id=expected)
            self.server.storage = self.engine
        self.engine.on_journal_failure(self._on_journal_failure)
        await self.engine.start()
        if self.store is not None and await underreplication.UnderReplicationStore(
                self.store).is_decommissioning(self.bookie_id):
            log.warning("bookie %s is being decommissioned: it stays read-only", self.bookie_id)
            self._forced_read_only = True
        if self.store is not None and expected is None:
            assert self.engine.cookie is not None
            await registration.store_cookie(self.store, self.bookie_id, self.engine.cookie)
        await self.server.start(conf.bookieBindAddress, conf.bookiePort, tls_context(conf))
        if not conf.metadataServiceUri and conf.bookiePort == 0 and not conf.bookieId:
            self.bookie_id = bookie_id_of(conf, self.server.port)
        await self.monitor.check()
        self._apply_read_only()
        if conf.httpServerEnabled:
            recovery = (None if self.store is None else
                        recovery_admin.AutoRecoveryAdmin(self.store, conf.lostBookieRecoveryDelay))
            self.http = http.HttpEndpoint(self, recovery)
            await self.http.start(conf.httpServerHost, conf.httpServerPort)
        if self.store is not None:
            self.registration = registration.Registration(self.store, self._info())
            await self.registration.register()
        self.monitor.start()
        if self.store is not None and conf.autoRecoveryDaemonEnabled:
            self.autorecovery = recovery_service.AutoRecoveryService(
                self.store, conf, self.bookie_id, self._info().http_address)
            self.autorecovery.start()
        if self.store is not None:
            self._ledger_gc = asyncio.get_running_loop().create_task(
                ledger_gc.run_periodically(self.engine, self.store, conf.gcWaitTime / 1000.0))
        self._ready = True
        log.info("bookie %s serving on port %d (read-only: %s)", self.bookie_id,
                 self.server.port, self.read_only)

    async def _metadata_at_start(self, conf: bookie_config.BookieConfig) -> str | None:
        """Open the metadata store and read the instance id this bookie's cookie must name.
        A store that does not answer yet (etcd starting, or slow under load) is retried for
        zkTimeout, as BookKeeper's bookie waits for its ZooKeeper session, instead of
        failing the start at the first unanswered read."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + conf.zkTimeout / 1000.0
        delays = METADATA_START_RETRY.start()
        while True:
            try:
                if self.store is None:
                    self.store = await metadata_factory.create_store(
                        conf.metadataServiceUri, session_timeout_s=conf.zkTimeout / 1000.0)
                return await registration.expected_instance_id(
                    self.store, self.bookie_id,
                    list(conf.journal_dirs) + list(conf.ledgerDirectories))
            except Exception as exc:
                if not common_errors.is_retriable(exc) or loop.time() >= deadline:
                    raise
                log.warning("bookie %s: metadata store not answering at start (%s); retrying",
                            self.bookie_id, exc)
                await asyncio.sleep(delays.next_delay())

    async def stop(self) -> None:
        """Clean shutdown; safe to call more than once and after a failed start."""
        if self._stopping:
            return
        self._stopping = True
        self._ready = False
        if self._ledger_gc is not None:
            await metadata_tasks.cancel_and_wait(self._ledger_gc)
        await self.monitor.stop()
        for task in list(self._mode_changes):
            await metadata_tasks.cancel_and_wait(task)
        if self.autorecovery is not None:
            await self._quietly(self.autorecovery.stop(), "stopping autorecovery")
        if self.server.serving:
            await self.server.stop(SHUTDOWN_GRACE_S)
        if self.registration is not None:
            await self._quietly(self.registration.unregister(), "unregistering")
        if self.http is not None:
            await self.http.stop()
        await self.engine.close()
        if self.store is not None:
            await self._quietly(self.store.close(), "closing the metadata store")
        self.metrics.shutdown()
        log.info("bookie %s stopped", self.bookie_id)

    @staticmethod
    async def _quietly(step: Any, what: str) -> None:
        try:
            await step
        except Exception as exc:  # noqa: BLE001 - shutdown goes on: the session's lease ends it anyway
            log.warning("%s failed during shutdown: %s", what, exc)

    # ----- read-only mode -----

    @property
    def read_only(self) -> bool:
        return self.server.read_only

    def _apply_read_only(self) -> bool:
        """Set the server's mode from the disk and the forced flag; True when it changed."""
        wanted = (self._forced_read_only or self.monitor.read_only
                  or self.engine.journal_failure is not None)
        changed = wanted != self.server.read_only
        self.server.read_only = wanted
        return changed

    async def _on_disk_change(self, full: bool) -> None:
        if full and not self.conf.readOnlyModeEnabled:
            log.error("ledger disk is full and readOnlyModeEnabled=false: shutting down")
            self.terminated.set()
            return
        await self._publish_mode()

    def _on_journal_failure(self, failure: BaseException) -> None:
        """A journal batch failed (on the loop): read-only now, registration as soon as it can."""
        if failure is self._journal_failure_seen:
            return  # the rest of the same failure's batches
        self._journal_failure_seen = failure
        if self.engine.journal_recoverable:
            log.error("journal write failed (%s): bookie %s is read-only until its journal "
                      "disk has room again", failure, self.bookie_id)
        else:
            log.error("journal failed for good (%s): bookie %s stays read-only until it is "
                      "restarted (its journal is replayed at start)", failure, self.bookie_id)
        self._apply_read_only()  # adds are refused from this turn on
        if self._stopping:
            return
        task = asyncio.get_running_loop().create_task(self._register_journal_failure(),
                                                      name="journal-failed-read-only")
        self._mode_changes.add(task)
        task.add_done_callback(self._mode_changes.discard)

    async def _register_journal_failure(self) -> None:
        try:
            await self._publish_mode(force=True)
        except Exception as exc:  # noqa: BLE001 - the next mode change registers it again
            log.warning("could not register bookie %s read-only: %s", self.bookie_id, exc)

    async def _retry_journal(self) -> None:
        """After a disk check: a journal that failed for lack of space writes again if it can."""
        engine = self.engine
        if engine.journal_failure is None or not engine.journal_recoverable:
            return
        if self.monitor.journal_has_room() and await engine.recover_journals():
            log.warning("journal writes again: bookie %s leaves read-only mode unless its "
                        "disks or an operator keep it there", self.bookie_id)
            await self._publish_mode()

    async def force_read_only(self, read_only: bool) -> None:
        self._forced_read_only = read_only
        await self._publish_mode()

    async def _publish_mode(self, *, force: bool = False) -> None:
        """Apply the wanted mode; register it when it changed (or `force`)."""
        if (self._apply_read_only() or force) and self.registration is not None:
            state = (registration.BookieState.READ_ONLY if self.read_only
                     else registration.BookieState.AVAILABLE)
            await self.registration.set_state(state)

    # ----- introspection (HTTP admin) -----

    def _info(self) -> registration.BookieInfo:
        conf = self.conf
        host = conf.advertisedAddress or socket.gethostname()
        http_address = f"http://{host}:{self.http.port}" if self.http is not None else ""
        return registration.BookieInfo(
            bookie_id=self.bookie_id,
            state=(registration.BookieState.READ_ONLY if self.read_only
                   else registration.BookieState.AVAILABLE),
            address=f"{host}:{self.server.port}",
            http_address=http_address,
            rack=conf.rack,
            instance_id=self.engine.instance_id,
        )

    @property
    def ready(self) -> bool:
        return self._ready

    @property
    def http_port(self) -> int | None:
        return None if self.http is None else self.http.port

    def state(self) -> dict[str, Any]:
        failure = self.engine.journal_failure
        return {
            "running": self._ready,
            "readOnly": self.read_only,
            "shuttingDown": self._stopping,
            "availableForHighPriorityWrites": self._ready and not self.read_only,
            "bookieId": self.bookie_id,
            "instanceId": self.engine.cookie.instance_id if self.engine.cookie else "",
            "registered": self.registration is not None,
            "diskUsage": round(self.monitor.last_usage, 4),
            "journalError": "" if failure is None else str(failure),
            "restartRequired": failure is not None and not self.engine.journal_recoverable,
        }

    async def ledgers(self) -> dict[str, dict[str, Any]]:
        result: dict[str, dict[str, Any]] = {}
        for ledger_id in await self.engine.list_ledgers():
            try:
                result[str(ledger_id)] = {
                    "lastAddConfirmed": await self.engine.read_last_add_confirmed(ledger_id),
                    "lastEntryId": await self.engine.last_entry_id(ledger_id),
                    "fenced": await self.engine.is_fenced(ledger_id),
                }
            except errors.NoSuchLedgerError:
                continue  # deleted meanwhile
        return result

    def metrics_text(self) -> bytes:
        return self.metrics.render()

    def _readings(self) -> dict[str, float]:
        readings: dict[str, float] = {
            "bookie_add_entry_in_progress": self.server.adds_in_progress,
            "bookie_read_entry_in_progress": self.server.reads_in_progress,
            "bookie_long_poll_lac_waiting": self.server.lac_waiters,
            "bookie_server_status": 0 if self.read_only else 1,
            "bookie_ledger_disk_usage": self.monitor.last_usage,
        }
        if self.autorecovery is not None:
            worker = self.autorecovery.worker.stats
            readings.update({
                "bookie_autorecovery_auditor": 1 if self.autorecovery.auditor.is_leader else 0,
                "bookie_autorecovery_ledgers_replicated": worker.ledgers_replicated,
                "bookie_autorecovery_fragments_replicated": worker.fragments_replicated,
                "bookie_autorecovery_bytes_copied": worker.bytes_copied,
                "bookie_autorecovery_failures": worker.failures,
            })
        if not self._ready:
            return readings
        stats = self.engine.stats()
        readings.update({
            "bookie_add_entry": stats.adds,
            "bookie_journal_sync": stats.journal_fsyncs,
            "bookie_journal_sync_seconds": stats.journal_fsync_seconds,
            "bookie_journal_batches": stats.journal_batches,
            "bookie_journal_bytes": stats.journal_bytes,
            "bookie_read_cache_hits": stats.read_cache_hits,
            "bookie_read_cache_misses": stats.read_cache_misses,
            "bookie_flush": stats.flushes,
            "bookie_journal_queue_size": stats.journal_queue_depth,
            "bookie_write_cache_size": stats.write_cache_bytes,
            "bookie_read_cache_size": stats.read_cache_bytes,
        })
        return readings
