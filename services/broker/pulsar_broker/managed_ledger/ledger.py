"""ManagedLedgerImpl: a managed ledger's life (open, recover, terminate, close, delete),
its cursors, and the trimming of ledgers every durable cursor has consumed.

The write side (ledger list, adds, rollover, reads) is in ledger_core.py; the
cursors themselves in cursor.py; the trimming decision in trimming.py.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence

from pulsar_bookie import errors as bookie_errors
from pulsar_bookie.client import api as client_api
from pulsar_common.metadata import api as metadata_api

from pulsar_broker.managed_ledger import (
    api,
    cache,
    config,
    cursor,
    errors,
    ledger_core,
    metadata,
    trimming,
)
from pulsar_broker.managed_ledger.ledger_core import State

log = logging.getLogger(__name__)

#: A recovered ledger whose client does not know its length is measured by reading it, in
#: chunks of this many entries, at most RECOVERED_SIZE_SCAN_MAX of them (then extrapolated).
SIZE_SCAN_CHUNK = 500
RECOVERED_SIZE_SCAN_MAX = 20_000


class ManagedLedgerImpl(ledger_core.ManagedLedgerCore):
    """One managed ledger; create it with `ManagedLedgerFactoryImpl.open`."""

    def __init__(
        self,
        name: str,
        ml_config: config.ManagedLedgerConfig,
        client: client_api.LedgerClient,
        store: metadata_api.MetadataStore,
        entry_cache: cache.EntryCache,
        now_ms: Callable[[], int],
        on_close: Callable[[ManagedLedgerImpl], None] | None = None,
    ):
        super().__init__(name, ml_config, client, store, entry_cache, now_ms)
        self._on_close = on_close
        self._trim_lock = asyncio.Lock()
        self._cursors: dict[str, cursor.ManagedCursorImpl] = {}
        self._cursors_opening: dict[str, asyncio.Task[cursor.ManagedCursorImpl]] = {}
        self._non_durable: set[cursor.ManagedCursorImpl] = set()
        self._trim_task: asyncio.Task[None] | None = None
        self._trim_again = False

    # -- lifecycle -----------------------------------------------------------------

    async def initialize(self) -> None:
        """Load the ledger list, recover the last ledger, start a new one, load cursors."""
        versioned = await self.meta.read_info()
        info = versioned.value if versioned is not None else metadata.ManagedLedgerInfo()
        if versioned is not None:
            self._info_version = versioned.version
        self._properties = dict(info.properties)
        self._terminated_position = info.terminated_position
        ledgers = list(info.ledgers)
        empty_last: int | None = None
        if ledgers:
            ledgers[-1] = await self._recover_ledger(ledgers[-1])
            if ledgers[-1].entries == 0:
                empty_last = ledgers.pop().ledger_id
        self._closed_ledgers = ledgers
        for ledger_info in ledgers:
            self.layout.add_closed_ledger(ledger_info.ledger_id, ledger_info.entries)
        if ledgers:
            self._last_confirmed = api.Position(ledgers[-1].ledger_id, ledgers[-1].entries - 1)
        async with self._metadata_lock:
            if self._terminated_position is not None:
                self._state = State.TERMINATED
                await self.write_ledger_list(ledgers)
            else:
                await self._start_first_ledger(ledgers)
        if empty_last is not None:
            await self._delete_ledger_quietly(empty_last)
        await self._load_cursors()

    async def _recover_ledger(self, info: api.LedgerInfo) -> api.LedgerInfo:
        """Fence and close the ledger the previous owner was writing; count what it holds."""
        try:
            handle = await self._client.open_ledger(
                info.ledger_id, recovery=True, password=self.password  # type: ignore[arg-type]
            )
        except bookie_errors.NoSuchLedgerError:
            # As Pulsar does: a listed ledger whose metadata is gone holds nothing to keep.
            log.warning("%s: last ledger %s no longer exists", self._name, info.ledger_id)
            return api.LedgerInfo(info.ledger_id, 0, 0, self.now_ms())
        except bookie_errors.BookieError as exc:
            raise errors.NonRecoverableLedgerError(
                f"{self._name}: cannot recover ledger {info.ledger_id}: {exc}"
            ) from exc
        entries = handle.last_add_confirmed + 1
        size = handle.length if handle.length >= 0 else await _measure_size(handle, entries)
        await handle.close()
        if entries == info.entries and size == info.size:
            return info
        return api.LedgerInfo(info.ledger_id, entries, size, self.now_ms())

    async def _start_first_ledger(self, ledgers: list[api.LedgerInfo]) -> None:
        try:
            handle = await self._create_ledger()
        except bookie_errors.BookieError as exc:
            raise errors.ManagedLedgerError(f"{self._name}: cannot create a ledger: {exc}") from exc
        now = self.now_ms()
        try:
            await self.write_ledger_list(ledgers + [api.LedgerInfo(handle.ledger_id, 0, 0, now)])
        except errors.ManagedLedgerFencedError:
            await self._delete_ledger_quietly(handle.ledger_id)
            raise
        self._start_ledger(handle, now)

    async def _load_cursors(self) -> None:
        for cursor_name in await self.meta.cursor_names():
            versioned = await self.meta.read_cursor(cursor_name)
            if versioned is not None:
                self._cursors[cursor_name] = cursor.ManagedCursorImpl.recover(
                    self, cursor_name, versioned.value, versioned.version
                )

    async def terminate(self) -> api.Position:
        """Refuse further adds, wait for those in flight, and record the last position."""
        if self._state is State.TERMINATED and self._terminated_position is not None:
            return self._terminated_position
        self._check_writable()
        self._refusing_adds = errors.ManagedLedgerTerminatedError
        try:
            await self.wait_idle()
            async with self._metadata_lock:
                self._check_usable()
                self._terminated_position = self._last_confirmed
                await self.write_ledger_list(self.ledgers)
                self._state = State.TERMINATED
        finally:
            self._refusing_adds = None
        self.wake_readers()
        return self._last_confirmed

    async def set_property(self, key: str, value: str) -> None:
        """Record a property in the managed ledger's metadata (e.g. the topic epoch)."""
        async with self._metadata_lock:
            self._check_usable()
            if self._state is State.FENCED:
                raise errors.ManagedLedgerFencedError(f"{self._name} is fenced: {self._fence_reason}")
            before = dict(self._properties)
            self._properties[key] = value
            try:
                await self.write_ledger_list(self.ledgers)
            except BaseException:
                self._properties = before
                raise

    async def close(self) -> None:
        """Flush cursors, seal the current ledger and release everything; idempotent."""
        if self._state in (State.CLOSED, State.DELETED):
            return
        self._refusing_adds = errors.ManagedLedgerClosedError
        await self.wait_idle()
        fenced = self._state is State.FENCED
        self._state = State.CLOSED
        for each in list(self._cursors.values()) + list(self._non_durable):
            try:
                # A fenced instance must not overwrite the new owner's cursor records.
                await each.close(flush=not fenced)
            except errors.ManagedLedgerError as exc:
                log.warning("%s: closing cursor %s failed: %s", self._name, each.name, exc)
        self.wake_readers()
        for task in [self._trim_task, *self._background]:
            if task is not None:
                task.cancel()
        if self._current is not None and not fenced:
            await self._retire(self._current, entries=-1)
        await self._reader.close()
        if self._on_close is not None:
            self._on_close(self)

    async def delete(self) -> None:
        """Delete the metadata (ledger list and cursors) and then every ledger."""
        ledger_ids = self.layout.ledger_ids
        await self.close()
        self._state = State.DELETED
        await self.meta.delete_all()
        for ledger_id in ledger_ids:
            await self._delete_ledger_quietly(ledger_id)

    @property
    def cursors(self) -> Sequence[cursor.ManagedCursorImpl]:
        """The durable cursors (subscriptions); readers' cursors are not listed."""
        return list(self._cursors.values())

    # -- cursors -------------------------------------------------------------------

    async def open_cursor(
        self, name: str, initial_position: api.InitialPosition = api.InitialPosition.LATEST
    ) -> cursor.ManagedCursorImpl:
        self._check_usable()
        existing = self._cursors.get(name)
        if existing is not None and not existing.is_closed:
            return existing
        opening = self._cursors_opening.get(name)
        if opening is None:
            opening = asyncio.ensure_future(self._open_cursor(name, initial_position))
            self._cursors_opening[name] = opening
            opening.add_done_callback(lambda _: self._cursors_opening.pop(name, None))
        return await asyncio.shield(opening)

    async def _open_cursor(
        self, name: str, initial_position: api.InitialPosition
    ) -> cursor.ManagedCursorImpl:
        existing = self._cursors.get(name)
        if existing is not None:
            reopened = existing.reopen()
        else:
            if initial_position is api.InitialPosition.EARLIEST:
                mark_delete = self.layout.previous_position(self.first_position)
            else:
                mark_delete = self._last_confirmed
            reopened = await cursor.ManagedCursorImpl.create(self, name, mark_delete)
        self._cursors[name] = reopened
        return reopened

    def new_non_durable_cursor(
        self, start_position: api.Position, name: str | None = None, *, inclusive: bool = False
    ) -> cursor.ManagedCursorImpl:
        self._check_usable()
        if start_position == api.EARLIEST:
            mark_delete = self.layout.previous_position(self.first_position)
        elif start_position == api.LATEST or start_position > self._last_confirmed:
            mark_delete = self._last_confirmed
        elif inclusive:
            mark_delete = self.layout.previous_position(start_position)
        else:
            mark_delete = start_position
        reader = cursor.ManagedCursorImpl(
            self, name or f"reader-{uuid.uuid4().hex[:10]}", mark_delete, durable=False
        )
        self._non_durable.add(reader)
        return reader

    async def delete_cursor(self, name: str) -> None:
        found = self._cursors.pop(name, None)
        if found is None:
            raise errors.CursorNotFoundError(f"{self._name} has no cursor {name!r}")
        await found.close(flush=False)
        await self.meta.delete_cursor(name)
        self.schedule_trim()

    def cursor_closed(self, closed: cursor.ManagedCursorImpl) -> None:
        self._non_durable.discard(closed)

    def update_config(self, ml_config: config.ManagedLedgerConfig) -> None:
        """New settings; trims at once in case the retention became shorter."""
        changed = ml_config != self.config
        super().update_config(ml_config)
        if changed and self._state in (State.OPEN, State.TERMINATED):
            self.schedule_trim()

    # -- trimming ------------------------------------------------------------------

    def schedule_trim(self) -> None:
        """Trim soon (coalesced): called when a durable cursor's mark-delete moves."""
        if self._trim_task is not None and not self._trim_task.done():
            self._trim_again = True
            return
        self._trim_task = asyncio.ensure_future(self._trim_loop())

    async def _trim_loop(self) -> None:
        while True:
            self._trim_again = False
            try:
                await self.trim_consumed_ledgers()
            except errors.ManagedLedgerError as exc:
                log.warning("%s: trimming failed: %s", self._name, exc)
            if not self._trim_again:
                return

    async def trim_consumed_ledgers(self) -> list[int]:
        """Delete ledgers every durable cursor is past and retention lets go; their ids."""
        async with self._trim_lock:
            doomed_ids = await self._drop_consumed_from_list()
            for ledger_id in doomed_ids:
                await self._reader.forget(ledger_id)
                await self._delete_ledger_quietly(ledger_id)
            return doomed_ids

    async def _drop_consumed_from_list(self) -> list[int]:
        """Remove the ledgers that may go from the persisted list (first, so none is dangling)."""
        async with self._metadata_lock:
            if self._state not in (State.OPEN, State.TERMINATED):
                return []
            doomed = trimming.ledgers_to_delete(
                self.ledgers,
                self._newest_ledger_id(),
                self._slowest_mark_delete(),
                trimming.Retention(self.config.retention_time_ms, self.config.retention_size_bytes),
                self.now_ms(),
            )
            if not doomed:
                return []
            doomed_ids = sorted(info.ledger_id for info in doomed)
            remaining = [i for i in self._closed_ledgers if i.ledger_id not in doomed_ids]
            current = self._current_info()
            await self.write_ledger_list(remaining + ([current] if current else []))
            self._closed_ledgers = remaining
            for ledger_id in doomed_ids:
                self.layout.remove_ledger(ledger_id)
            return doomed_ids

    def _newest_ledger_id(self) -> int | None:
        ids = self.layout.ledger_ids
        return ids[-1] if ids else None

    def _slowest_mark_delete(self) -> api.Position | None:
        positions = [c.mark_delete_position for c in self._cursors.values()]
        return min(positions) if positions else None



async def _measure_size(handle: client_api.ReadHandle, entries: int) -> int:
    """Bytes in a ledger's first `entries` entries (extrapolated past RECOVERED_SIZE_SCAN_MAX)."""
    scanned = min(entries, RECOVERED_SIZE_SCAN_MAX)
    size = 0
    for first in range(0, scanned, SIZE_SCAN_CHUNK):
        last = min(first + SIZE_SCAN_CHUNK, scanned) - 1
        try:
            size += sum(len(e.payload) for e in await handle.read(first, last))
        except bookie_errors.BookieError as exc:
            raise errors.NonRecoverableLedgerError(
                f"cannot read ledger {handle.ledger_id} to measure it: {exc}"
            ) from exc
    return size if scanned == entries else size * entries // max(scanned, 1)
