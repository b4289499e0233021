"""ManagedLedgerFactoryImpl: opens managed ledgers by name, one instance per name.

It owns what the managed ledgers of a broker share: the ledger client, the
metadata store, the entry cache (bounded by managedLedgerCacheSizeMB) and a
background task that rolls over ledgers that grew too old and trims
ledgers whose retention expired, even when nothing is written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from pulsar_bookie.client import api as client_api
from pulsar_common import clock
from pulsar_common.metadata import api as metadata_api

from pulsar_broker.managed_ledger import api, cache, config, cursor, errors, ledger, metadata, stats

log = logging.getLogger(__name__)

#: How often open managed ledgers are checked for age-based rollover and retention.
MAINTENANCE_INTERVAL_S = 60.0


class ManagedLedgerFactoryImpl:
    def __init__(
        self,
        store: metadata_api.MetadataStore,
        client: client_api.LedgerClient,
        default_config: config.ManagedLedgerConfig | None = None,
        *,
        now_ms: Callable[[], int] = clock.wall_clock_ms,
        maintenance_interval_s: float | None = MAINTENANCE_INTERVAL_S,
    ):
        """maintenance_interval_s None disables the background task (tests drive it)."""
        self._store = store
        self._client = client
        self.default_config = default_config or config.ManagedLedgerConfig()
        self._now_ms = now_ms
        self.entry_cache = cache.EntryCache(self.default_config.cache_size_bytes)
        self._ledgers: dict[str, ledger.ManagedLedgerImpl] = {}
        self._opening: dict[str, asyncio.Task[ledger.ManagedLedgerImpl]] = {}
        self._maintenance_interval_s = maintenance_interval_s
        self._maintenance: asyncio.Task[None] | None = None
        self._shut_down = False

    async def open(
        self, name: str, ml_config: config.ManagedLedgerConfig | None = None
    ) -> ledger.ManagedLedgerImpl:
        """Open (or create) the managed ledger; the same instance while it stays open.

        ml_config (for example with a namespace's retention) applies when this
        call is the one that opens it.
        """
        if self._shut_down:
            raise errors.ManagedLedgerClosedError("the managed ledger factory is shut down")
        metadata.ledger_path(name)
        opened = self._ledgers.get(name)
        while opened is not None and opened.closing:
            # An unload's close and a reconnect's open crossed: the closing instance takes no
            # adds, so wait until it has sealed its ledger and flushed its cursors, then open
            # anew (as Apache's factory drops a ledger from its map once it is closed).
            try:
                await opened.close()
            except Exception as exc:  # noqa: BLE001 - whatever failed in its close
                # Forgotten all the same (see ManagedLedgerImpl._close): open afresh.
                log.warning("%s: its close failed (%s); opening it anew", name, exc)
            opened = self._ledgers.get(name)
            if self._shut_down:
                raise errors.ManagedLedgerClosedError("the managed ledger factory is shut down")
        if opened is not None:
            return opened
        task = self._opening.get(name)
        if task is None:
            task = asyncio.ensure_future(self._open(name, ml_config or self.default_config))
            self._opening[name] = task
        return await asyncio.shield(task)

    async def _open(
        self, name: str, ml_config: config.ManagedLedgerConfig
    ) -> ledger.ManagedLedgerImpl:
        try:
            managed = ledger.ManagedLedgerImpl(
                name, ml_config, self._client, self._store, self.entry_cache, self._now_ms,
                on_close=self._forget,
            )
            await managed.initialize()
            self._ledgers[name] = managed
            self._start_maintenance()
            return managed
        finally:
            self._opening.pop(name, None)

    def cache_counts(self) -> stats.CacheCounts:
        """The shared entry cache's size and counters now (Apache's cache statistics)."""
        return self.entry_cache.counts()

    def get(self, name: str) -> ledger.ManagedLedgerImpl | None:
        """The open instance, if any (no I/O)."""
        return self._ledgers.get(name)

    async def exists(self, name: str) -> bool:
        return name in self._ledgers or await self._store.exists(metadata.ledger_path(name))

    async def delete(self, name: str) -> None:
        """Delete the managed ledger with its ledgers and cursors."""
        if not await self.exists(name):
            raise errors.ManagedLedgerNotFoundError(f"managed ledger {name!r} does not exist")
        managed = await self.open(name)
        await managed.delete()

    async def shutdown(self) -> None:
        self._shut_down = True
        if self._maintenance is not None:
            self._maintenance.cancel()
        for managed in list(self._ledgers.values()):
            await managed.close()

    async def run_maintenance(self) -> None:
        """One round of age-based rollover and retention trimming over open ledgers."""
        for managed in list(self._ledgers.values()):
            try:
                await managed.check_ledger_rollover()
                await managed.trim_consumed_ledgers()
            except errors.ManagedLedgerError as exc:
                log.warning("%s: maintenance failed: %s", managed.name, exc)

    def _forget(self, managed: ledger.ManagedLedgerImpl) -> None:
        if self._ledgers.get(managed.name) is managed:
            del self._ledgers[managed.name]

    def _start_maintenance(self) -> None:
        if self._maintenance is None and self._maintenance_interval_s is not None:
            self._maintenance = asyncio.ensure_future(self._maintain(self._maintenance_interval_s))

    async def _maintain(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await self.run_maintenance()


def _implements_contracts(
    managed_factory: ManagedLedgerFactoryImpl,
    managed: ledger.ManagedLedgerImpl,
    managed_cursor: cursor.ManagedCursorImpl,
) -> tuple[api.ManagedLedgerFactory, api.ManagedLedger, api.ManagedCursor]:
    """Never called: mypy checks here that the implementations satisfy the contracts."""
    return managed_factory, managed, managed_cursor
