"""ManagedLedgerImpl: one managed ledger, put together from its parts.

An append-only log of entries kept in a sequence of ledgers. The parts each
have a file of their own: the ledger list and its CAS-written record
(ledger_list.py), the recovery of the ledger a previous owner was writing
(recovery.py), the add pipeline that completes adds in call order
(add_pipeline.py), the rollover to a new ledger (rollover.py), the trimming of
consumed ledgers (trimmer.py, deciding with trimming.py), reads through the
entry cache (ledger_reader.py) and the cursors (cursor_registry.py, cursor.py;
a cursor sees the managed ledger only through the small `cursor.CursorLedger`
protocol). This file owns the life cycle (open, terminate, close, delete) and
the state every part consults.

A lost CAS on the ledger list or a cursor, or a ledger fenced by another
writer, means another broker took the topic over: this instance is fenced
and writes nothing more.
"""

from __future__ import annotations

import asyncio
import enum
import logging
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
    cursor_registry,
    errors,
    layout,
    ledger_list,
    ledger_reader,
    metadata,
    recovery,
    rollover,
    stats,
    trimmer,
    trimming,
)

log = logging.getLogger(__name__)

#: Ledger custom metadata key naming the managed ledger a ledger belongs to.
MANAGED_LEDGER_TAG = "pulsar/managed-ledger"

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
        #: What this instance counted since it was opened (Apache's ManagedLedgerMBeanImpl).
        self.stats = stats.ManagedLedgerStats()
        self._list = ledger_list.LedgerList(metadata.ManagedLedgerMetadata(store, name), self.fence)
        self._reader = ledger_reader.LedgerReader(
            name, client, entry_cache, self.password, self.stats)
        self._pipeline = add_pipeline.AddPipeline(name, self, now_ms, self._spawn, self.stats)
        self._rollover = rollover.Rollover(self, self._list, self._pipeline)
        self._trimmer = trimmer.Trimmer(self, self._list)
        self._state = State.OPEN
        self._fence_reason = ""
        self._refusing_adds: type[errors.ManagedLedgerError] | None = None
        self._closing: asyncio.Future[None] | None = None
        self._last_confirmed = api.Position(-1, -1)
        self._entry_waiters: set[asyncio.Future[None]] = set()
        self._background: set[asyncio.Task[None]] = set()
        self._cursors = cursor_registry.CursorRegistry(self, self._list.meta)
        #: Entries added by this instance since it was opened (Pulsar's entriesAddedCounter).
        self.entries_added_counter = 0
        #: Why the last ledger write failed (what adds that then time out are told).
        self.last_write_failure: BaseException | None = None

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
        return self._cursors.durable

    # -- lifecycle -----------------------------------------------------------------

    async def initialize(self) -> None:
        """Load the ledger list, recover the last ledger, start a new one, load cursors."""
        ledgers = await self._list.load()
        empty_last: int | None = None
        if ledgers:
            ledgers[-1] = await recovery.recover_last_ledger(
                self._name, self._client, ledgers[-1], self.password, self.now_ms)
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
        await self._cursors.load()

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

    @property
    def closing(self) -> bool:
        """Whether close() has started (this instance takes no more adds, whatever comes)."""
        return self._closing is not None

    async def close(self) -> None:
        """Flush cursors, seal the current ledger and release everything; idempotent, and
        calls made while a close is under way return once that close is done."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._close())
        await asyncio.shield(self._closing)

    async def _close(self) -> None:
        self._refusing_adds = errors.ManagedLedgerClosedError
        try:
            await self.wait_idle()
            fenced = self._state is State.FENCED
            self._state = State.CLOSED
            # A fenced instance must not overwrite the new owner's cursor records.
            await self._cursors.close_all(flush=not fenced)
            self.wake_readers()
            self._trimmer.cancel()
            for task in self._background:
                task.cancel()
            if self._list.current is not None and not fenced:
                await self._retire(self._list.current, entries=-1)
            await self._reader.close()
        finally:
            # Even a close that failed half-way leaves this instance refusing adds: the
            # factory forgets it, so that the next open starts afresh.
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
        # On every add: kept to plain attribute reads and one call for the common case.
        ledgers = self._list
        current = ledgers.current
        if current is None or self._state is not State.OPEN or self._rollover.running:
            return None
        if ledgers.current_broken or (ledgers.initiated_entries and ledger_list.is_full(
                self.config, ledgers.initiated_entries, ledgers.initiated_size,
                self.now_ms() - ledgers.current_created_ms)):
            self._rollover.start()
            return None
        ledgers.initiated_entries += 1
        ledgers.initiated_size += size_bytes
        return current

    def write_failed(
        self, handle: client_api.WriteHandle, failure: BaseException
    ) -> errors.ManagedLedgerError | None:
        if isinstance(failure, bookie_errors.LedgerFencedError):
            self.fence(f"ledger {handle.ledger_id} was fenced by another writer")
            return errors.ManagedLedgerFencedError(f"{self._name}: ledger fenced: {failure}")
        if self._state is not State.OPEN:
            return errors.ManagedLedgerWriteError(f"{self._name}: add failed: {failure}")
        # The ledger is sealed at its last confirmed entry and replaced; this add, and the
        # ones after it, are written to the next ledger (within the add timeout).
        if not self._list.current_broken:
            log.warning("%s: ledger %s failed (%s); its pending adds go to the next ledger",
                        self._name, handle.ledger_id, failure)
        self._list.current_broken = True
        self.last_write_failure = failure
        return None

    def entry_added(self, position: api.Position, data: bytes) -> None:
        ledgers = self._list
        ledgers.current_entries += 1
        ledgers.current_size += len(data)
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
        return await self._reader.read_positions(positions, max_bytes)

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
        return await self._cursors.open(name, initial_position)

    def new_non_durable_cursor(
        self, start_position: api.Position, name: str | None = None, *, inclusive: bool = False
    ) -> cursor.ManagedCursorImpl:
        self._check_usable()
        return self._cursors.new_non_durable(start_position, name, inclusive)

    async def delete_cursor(self, name: str) -> None:
        await self._cursors.delete(name)
        self.schedule_trim()

    # cursor.CursorLedger

    def cursor_closed(self, closed: cursor.ManagedCursorImpl) -> None:
        self._cursors.closed(closed)

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

    async def truncate(self) -> list[int]:
        """Apache's asyncTruncate: every cursor moves to the last entry (its backlog cleared,
        the cursor kept), then every ledger but the current one is deleted, whatever the
        retention; the ids deleted. There is no rollover first: the current ledger stays,
        and goes with a later trim once it has rolled over. Cursors are persisted before
        the ledger list changes, so a crash in between leaves ledgers nobody needs, never a
        cursor behind a deleted ledger."""
        self._check_usable()
        if self._state is State.FENCED:
            raise errors.ManagedLedgerFencedError(f"{self._name} is fenced: {self._fence_reason}")
        await self._cursors.clear_backlogs()
        return await self._trimmer.trim(trimming.KEEP_NOTHING)

    async def wait_trimmed(self) -> None:
        """Until a trim running in the background (scheduled by an ack) is over."""
        task = self._trimmer.task
        if task is not None:
            await task

    # trimmer.TrimOwner

    def trimmable(self) -> bool:
        return self._state in (State.OPEN, State.TERMINATED)

    def slowest_mark_delete(self) -> api.Position | None:
        return self._cursors.slowest_mark_delete()

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

