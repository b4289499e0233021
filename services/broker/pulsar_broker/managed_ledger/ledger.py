"""ManagedLedgerImpl: one managed ledger, put together from its parts.

An append-only log of entries kept in a sequence of ledgers. The parts each
have a file of their own: the ledger list and its CAS-written record
(ledger_list.py), the add pipeline that completes adds in call order
(add_pipeline.py), the rollover to a new ledger (rollover.py), the trimming of
consumed ledgers (trimmer.py, deciding with trimming.py), reads through the
entry cache (ledger_reader.py) and the cursors (cursor.py, which see the
managed ledger only through the small `cursor.CursorLedger` protocol). This
file owns the life cycle (open, recover, terminate, close, delete), the state
every part consults, and the cursors' registry.

A lost CAS on the ledger list or a cursor, or a ledger fenced by another
writer, means another broker took the topic over: this instance is fenced
and writes nothing more.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import uuid
from collections.abc import Callable, Coroutine, Sequence

from pulsar_bookie import errors as bookie_errors
from pulsar_bookie import types
from pulsar_bookie.client import api as client_api
from pulsar_common.metadata import api as metadata_api

from pulsar_broker.managed_ledger import (
    add_pipeline,
    api,
    cache,
    config,
    cursor,
    errors,
    layout,
    ledger_list,
    ledger_reader,
    metadata,
    rollover,
    trimmer,
)

log = logging.getLogger(__name__)

#: Ledger custom metadata key naming the managed ledger a ledger belongs to.
MANAGED_LEDGER_TAG = "pulsar/managed-ledger"

#: A recovered ledger whose client does not know its length is measured by reading it, in
#: chunks of this many entries, at most RECOVERED_SIZE_SCAN_MAX of them (then extrapolated).
SIZE_SCAN_CHUNK = 500
RECOVERED_SIZE_SCAN_MAX = 20_000


class State(enum.Enum):
    OPEN = "open"
    FENCED = "fenced"
    TERMINATED = "terminated"
    CLOSED = "closed"
    DELETED = "deleted"


class ManagedLedgerImpl:
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
        self._name = name
        self.config = ml_config
        self._client = client
        self._cache = entry_cache
        self.now_ms = now_ms
        self._on_close = on_close
        self.password = b""
        self._list = ledger_list.LedgerList(metadata.ManagedLedgerMetadata(store, name), self.fence)
        self._reader = ledger_reader.LedgerReader(name, client, entry_cache, self.password)
        self._pipeline = add_pipeline.AddPipeline(name, self, now_ms, self._spawn)
        self._rollover = rollover.Rollover(self, self._list, self._pipeline)
        self._trimmer = trimmer.Trimmer(self, self._list)
        self._state = State.OPEN
        self._fence_reason = ""
        self._refusing_adds: type[errors.ManagedLedgerError] | None = None
        self._last_confirmed = api.Position(-1, -1)
        self._entry_waiters: set[asyncio.Future[None]] = set()
        self._background: set[asyncio.Task[None]] = set()
        self._cursors: dict[str, cursor.ManagedCursorImpl] = {}
        self._cursors_opening: dict[str, asyncio.Task[cursor.ManagedCursorImpl]] = {}
        self._non_durable: set[cursor.ManagedCursorImpl] = set()
        #: Entries added by this instance since it was opened (Pulsar's entriesAddedCounter).
        self.entries_added_counter = 0

    # -- read-only views -------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def state(self) -> State:
        return self._state

    @property
    def meta(self) -> metadata.ManagedLedgerMetadata:
        return self._list.meta

    @property
    def layout(self) -> layout.LedgerLayout:
        return self._list.layout

    @property
    def last_confirmed_entry(self) -> api.Position:
        return self._last_confirmed

    @property
    def first_position(self) -> api.Position:
        """The oldest entry still stored (or where the next one will go when there are none)."""
        ids = self.layout.ledger_ids
        if not ids:
            return self.layout.next_position(self._last_confirmed)
        return self.layout.next_position(api.Position(ids[0], -1))

    @property
    def ledgers(self) -> Sequence[api.LedgerInfo]:
        return self._list.ledgers

    @property
    def current_ledger_id(self) -> int | None:
        current = self._list.current
        return None if current is None else current.ledger_id

    @property
    def number_of_entries(self) -> int:
        return sum(info.entries for info in self.ledgers)

    @property
    def total_size(self) -> int:
        return sum(info.size for info in self.ledgers)

    @property
    def is_terminated(self) -> bool:
        return self._state is State.TERMINATED

    @property
    def is_closed(self) -> bool:
        return self._state in (State.CLOSED, State.DELETED)

    @property
    def is_fenced(self) -> bool:
        return self._state is State.FENCED

    @property
    def properties(self) -> dict[str, str]:
        return dict(self._list.properties)

    @property
    def cursors(self) -> Sequence[cursor.ManagedCursorImpl]:
        """The durable cursors (subscriptions); readers' cursors are not listed."""
        return list(self._cursors.values())

    # -- lifecycle -----------------------------------------------------------------

    async def initialize(self) -> None:
        """Load the ledger list, recover the last ledger, start a new one, load cursors."""
        ledgers = await self._list.load()
        empty_last: int | None = None
        if ledgers:
            ledgers[-1] = await self._recover_ledger(ledgers[-1])
            if ledgers[-1].entries == 0:
                empty_last = ledgers.pop().ledger_id
        self._list.set_closed(ledgers)
        if ledgers:
            self._last_confirmed = api.Position(ledgers[-1].ledger_id, ledgers[-1].entries - 1)
        async with self._list.lock:
            if self._list.terminated_position is not None:
                self._state = State.TERMINATED
                await self._list.write(ledgers)
            else:
                await self._start_first_ledger(ledgers)
        if empty_last is not None:
            await self._delete_ledger_quietly(empty_last)
        await self._load_cursors()

    async def _recover_ledger(self, info: api.LedgerInfo) -> api.LedgerInfo:
        """Fence and close the ledger the previous owner was writing; count what it holds."""
        try:
            handle = await self._client.open_ledger(
                types.LedgerId(info.ledger_id), recovery=True, password=self.password
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
            handle = await self.create_ledger()
        except bookie_errors.BookieError as exc:
            raise errors.ManagedLedgerError(f"{self._name}: cannot create a ledger: {exc}") from exc
        now = self.now_ms()
        try:
            await self._list.write(ledgers + [api.LedgerInfo(handle.ledger_id, 0, 0, now)])
        except errors.ManagedLedgerFencedError:
            await self._delete_ledger_quietly(handle.ledger_id)
            raise
        self._start_ledger(handle, now)

    def _start_ledger(self, handle: client_api.WriteHandle, now_ms: int) -> None:
        self._list.start_ledger(handle, now_ms)
        self._reader.set_current(handle)
        if self._last_confirmed.ledger_id < 0:
            self._last_confirmed = api.Position(handle.ledger_id, -1)

    async def _load_cursors(self) -> None:
        for cursor_name in await self.meta.cursor_names():
            versioned = await self.meta.read_cursor(cursor_name)
            if versioned is not None:
                self._cursors[cursor_name] = cursor.ManagedCursorImpl.recover(
                    self, cursor_name, versioned.value, versioned.version
                )

    async def terminate(self) -> api.Position:
        """Refuse further adds, wait for those in flight, and record the last position."""
        terminated = self._list.terminated_position
        if self._state is State.TERMINATED and terminated is not None:
            return terminated
        self._check_writable()
        self._refusing_adds = errors.ManagedLedgerTerminatedError
        try:
            await self.wait_idle()
            async with self._list.lock:
                self._check_usable()
                self._list.terminated_position = self._last_confirmed
                await self._list.write(self.ledgers)
                self._state = State.TERMINATED
        finally:
            self._refusing_adds = None
        self.wake_readers()
        return self._last_confirmed

    async def set_property(self, key: str, value: str) -> None:
        """Record a property in the managed ledger's metadata (e.g. the topic epoch)."""
        async with self._list.lock:
            self._check_usable()
            if self._state is State.FENCED:
                raise errors.ManagedLedgerFencedError(f"{self._name} is fenced: {self._fence_reason}")
            before = dict(self._list.properties)
            self._list.properties[key] = value
            try:
                await self._list.write(self.ledgers)
            except BaseException:
                self._list.properties = before
                raise

    def update_config(self, ml_config: config.ManagedLedgerConfig) -> None:
        """New settings for the next decisions; trims at once in case the retention became
        shorter."""
        changed = ml_config != self.config
        self.config = ml_config
        if changed and self._state in (State.OPEN, State.TERMINATED):
            self.schedule_trim()

    def fence(self, reason: str) -> None:
        if self._state in (State.CLOSED, State.DELETED, State.FENCED):
            return
        log.warning("%s fenced: %s", self._name, reason)
        self._state = State.FENCED
        self._fence_reason = reason
        self._pipeline.fail_queued(
            errors.ManagedLedgerFencedError(f"{self._name} is fenced: {reason}"))

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
        self._trimmer.cancel()
        for task in self._background:
            task.cancel()
        if self._list.current is not None and not fenced:
            await self._retire(self._list.current, entries=-1)
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

    # -- adding entries ----------------------------------------------------------

    async def add_entry(self, data: bytes) -> api.Position:
        return await asyncio.shield(self.add_entry_future(data))

    def add_entry_future(self, data: bytes) -> asyncio.Future[api.Position]:
        """add_entry without a coroutine (the broker's publish path): a future resolved with
        the position once durable, in call order. Refusals raise at once; never cancel it."""
        self._check_writable()
        return self._pipeline.accept(data)

    async def wait_idle(self) -> None:
        """Until no add is queued or in flight and no rollover runs."""
        await self._pipeline.wait_idle()

    async def check_ledger_rollover(self) -> None:
        """Roll over a current ledger that became too old even without new adds."""
        idle = self._state is State.OPEN and not self._rollover.running
        if idle and self._list.current_is_full(self.config, self.now_ms()):
            self._rollover.start()
        await self._rollover.wait()

    def _check_writable(self) -> None:
        if self._state is State.FENCED:
            raise errors.ManagedLedgerFencedError(
                f"{self._name} is fenced: {self._fence_reason}"
            )
        if self._state in (State.CLOSED, State.DELETED):
            raise errors.ManagedLedgerClosedError(f"{self._name} is closed")
        if self._state is State.TERMINATED:
            raise errors.ManagedLedgerTerminatedError(f"{self._name} is terminated")
        if self._refusing_adds is not None:
            raise self._refusing_adds(f"{self._name} is closing or terminating")

    # add_pipeline.AddTarget

    def handle_for(self, size_bytes: int) -> client_api.WriteHandle | None:
        current = self._list.current
        if self._state is not State.OPEN or self._rollover.running or current is None:
            return None
        if self._list.current_broken or self._list.current_is_full(self.config, self.now_ms()):
            self._rollover.start()
            return None
        self._list.started(size_bytes)
        return current

    def write_failed(
        self, handle: client_api.WriteHandle, failure: BaseException
    ) -> errors.ManagedLedgerError:
        if isinstance(failure, bookie_errors.LedgerFencedError):
            self.fence(f"ledger {handle.ledger_id} was fenced by another writer")
            return errors.ManagedLedgerFencedError(f"{self._name}: ledger fenced: {failure}")
        self._list.current_broken = True
        return errors.ManagedLedgerWriteError(f"{self._name}: add failed: {failure}")

    def entry_added(self, position: api.Position, data: bytes) -> None:
        self._list.added(len(data))
        self.entries_added_counter += 1
        self._last_confirmed = position
        self._cache.insert(self._name, api.Entry(position, data))

    def entries_added(self) -> None:
        self.wake_readers()

    # rollover.RolloverOwner

    def takes_adds(self) -> bool:
        return self._state is State.OPEN

    def refusal(self) -> type[errors.ManagedLedgerError] | None:
        return self._refusing_adds

    async def create_ledger(self) -> client_api.WriteHandle:
        return await self._client.create_ledger(
            self.config.ensemble_size,
            self.config.write_quorum,
            self.config.ack_quorum,
            {MANAGED_LEDGER_TAG: self._name},
            self.password,
        )

    def rolled_over(self, old: client_api.WriteHandle) -> None:
        self._reader.set_current(self._list.current)
        self._spawn(self._retire(old, self.layout.entries_of(old.ledger_id) or 0))
        self.schedule_trim()

    def discard_ledger(self, ledger_id: int) -> None:
        self._spawn(self._delete_ledger_quietly(ledger_id))

    async def _retire(self, handle: client_api.WriteHandle, entries: int) -> None:
        """Seal a former current ledger; an empty one is deleted."""
        try:
            await handle.close()
        except bookie_errors.BookieError as exc:
            log.warning("%s: closing ledger %s failed: %s", self._name, handle.ledger_id, exc)
        if entries == 0:
            await self._delete_ledger_quietly(handle.ledger_id)

    # -- reading -------------------------------------------------------------------

    async def read_entry(self, position: api.Position) -> api.Entry:
        if not self.layout.exists(position) or position > self._last_confirmed:
            raise errors.EntryNotFoundError(f"{self._name}: no entry at {position}")
        entries = await self._reader.read(position.ledger_id, position.entry_id, position.entry_id)
        return entries[0]

    async def read_positions(
        self, positions: Sequence[api.Position], max_bytes: int | None = None
    ) -> list[api.Entry]:
        """Entries at these positions (in order), stopping once max_bytes are gathered."""
        entries: list[api.Entry] = []
        size = 0
        for ledger_id, first, last in _runs(positions):
            for entry in await self._reader.read(ledger_id, first, last):
                entries.append(entry)
                size += len(entry.data)
                if max_bytes is not None and size >= max_bytes:
                    return entries
        return entries

    def wait_for_entries(self) -> asyncio.Future[None]:
        """Resolves on the next added entry (or when the ledger closes or terminates)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._entry_waiters.add(waiter)
        waiter.add_done_callback(self._entry_waiters.discard)
        return waiter

    def wake_readers(self) -> None:
        for waiter in list(self._entry_waiters):
            if not waiter.done():
                waiter.set_result(None)

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

    # cursor.CursorLedger

    def cursor_closed(self, closed: cursor.ManagedCursorImpl) -> None:
        self._non_durable.discard(closed)

    async def write_cursor(
        self, name: str, info: metadata.CursorInfo, expected_version: int
    ) -> int:
        try:
            return await self.meta.write_cursor(name, info, expected_version)
        except errors.MetadataVersionError as exc:
            self.fence(f"cursor {name}: {exc}")
            raise

    def schedule_trim(self) -> None:
        """Trim soon (coalesced): called when a durable cursor's mark-delete moves."""
        self._trimmer.schedule()

    # -- trimming ------------------------------------------------------------------

    async def trim_consumed_ledgers(self) -> list[int]:
        """Delete ledgers every durable cursor is past and retention lets go; their ids."""
        return await self._trimmer.trim()

    async def wait_trimmed(self) -> None:
        """Until a trim running in the background (scheduled by an ack) is over."""
        task = self._trimmer.task
        if task is not None:
            await task

    # trimmer.TrimOwner

    def trimmable(self) -> bool:
        return self._state in (State.OPEN, State.TERMINATED)

    def slowest_mark_delete(self) -> api.Position | None:
        positions = [c.mark_delete_position for c in self._cursors.values()]
        return min(positions) if positions else None

    async def forget_ledger(self, ledger_id: int) -> None:
        await self._reader.forget(ledger_id)
        await self._delete_ledger_quietly(ledger_id)

    # -- helpers -------------------------------------------------------------------

    def _check_usable(self) -> None:
        if self._state in (State.CLOSED, State.DELETED):
            raise errors.ManagedLedgerClosedError(f"{self._name} is closed")

    async def _delete_ledger_quietly(self, ledger_id: int) -> None:
        try:
            await self._client.delete_ledger(types.LedgerId(ledger_id))
        except bookie_errors.BookieError as exc:
            log.warning("%s: deleting ledger %s failed: %s", self._name, ledger_id, exc)

    def _spawn(self, coroutine: Coroutine[object, object, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _runs(positions: Sequence[api.Position]) -> list[tuple[int, int, int]]:
    """Group positions into (ledger, first entry, last entry) runs of consecutive entries."""
    runs: list[tuple[int, int, int]] = []
    for position in positions:
        if runs and runs[-1][0] == position.ledger_id and runs[-1][2] + 1 == position.entry_id:
            runs[-1] = (runs[-1][0], runs[-1][1], position.entry_id)
        else:
            runs.append((position.ledger_id, position.entry_id, position.entry_id))
    return runs


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
