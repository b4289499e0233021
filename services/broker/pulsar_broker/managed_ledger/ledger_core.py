"""The write side of a managed ledger: its ledger list, the add pipeline, rollover, reads.

Adds go to the current ledger in call order; the position of an entry is
(ledger id, entry id). When the current ledger is full (entries, size or
age) new adds wait in a queue while a new ledger is created and the ledger
list is updated by CAS; then they continue on the new ledger in order. The
ledger list lives in the metadata store (see metadata.py); a lost CAS means
another broker took the topic over, so this instance is fenced and writes
nothing more. Reads go through the entry cache and the ledger handles
(ledger_reader.py). Opening, closing, cursors and trimming are added on top
in ledger.py.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import functools
import logging
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass

from pulsar_bookie import errors as bookie_errors
from pulsar_bookie.client import api as client_api
from pulsar_common.metadata import api as metadata_api

from pulsar_broker.managed_ledger import (
    api,
    cache,
    config,
    errors,
    layout,
    ledger_reader,
    metadata,
)

log = logging.getLogger(__name__)

#: Adds accepted but not yet completed (queued during a rollover or in flight) per managed
#: ledger; beyond it add_entry fails at once with a retriable TooManyPendingAddsError.
PENDING_ADDS_MAX = 100_000

#: Ledger custom metadata key naming the managed ledger a ledger belongs to.
MANAGED_LEDGER_TAG = "pulsar/managed-ledger"


class State(enum.Enum):
    OPEN = "open"
    FENCED = "fenced"
    TERMINATED = "terminated"
    CLOSED = "closed"
    DELETED = "deleted"


#: Waits between attempts to create a ledger while none can be (no writable bookies):
#: doubling from the first to the last.
CREATE_RETRY_FIRST_S = 0.1
CREATE_RETRY_MAX_S = 5.0


@dataclass(eq=False)
class _AddOp:
    data: bytes
    future: asyncio.Future[api.Position]
    #: When add_entry accepted it (now_ms), for managedLedgerAddEntryTimeoutSeconds.
    accepted_ms: int = 0
    position: api.Position | None = None
    error: BaseException | None = None
    done: bool = False


class ManagedLedgerCore:
    """Ledger list, adds, rollover and reads of one managed ledger."""

    def __init__(
        self,
        name: str,
        ml_config: config.ManagedLedgerConfig,
        client: client_api.LedgerClient,
        store: metadata_api.MetadataStore,
        entry_cache: cache.EntryCache,
        now_ms: Callable[[], int],
    ):
        self._name = name
        self.config = ml_config
        self._client = client
        self.meta = metadata.ManagedLedgerMetadata(store, name)
        self._cache = entry_cache
        self.now_ms = now_ms
        self.password = b""
        self.layout = layout.LedgerLayout()
        self._reader = ledger_reader.LedgerReader(name, client, entry_cache, self.password)
        self._state = State.OPEN
        self._fence_reason = ""
        self._info_version = metadata_api.VERSION_ABSENT
        self._properties: dict[str, str] = {}
        self._terminated_position: api.Position | None = None
        self._closed_ledgers: list[api.LedgerInfo] = []
        self._current: client_api.WriteHandle | None = None
        self._current_entries = 0
        self._current_size = 0
        self._current_created_ms = 0
        self._initiated_entries = 0
        self._initiated_size = 0
        self._current_broken = False
        self._last_confirmed = api.Position(-1, -1)
        self._queue: collections.deque[_AddOp] = collections.deque()
        self._inflight: collections.deque[_AddOp] = collections.deque()
        self._rollover_task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._refusing_adds: type[errors.ManagedLedgerError] | None = None
        self._metadata_lock = asyncio.Lock()
        self._entry_waiters: set[asyncio.Future[None]] = set()
        self._background: set[asyncio.Task[None]] = set()
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
        current = self._current_info()
        return list(self._closed_ledgers) + ([current] if current is not None else [])

    @property
    def current_ledger_id(self) -> int | None:
        return None if self._current is None else self._current.ledger_id

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
        return dict(self._properties)

    def _current_info(self) -> api.LedgerInfo | None:
        if self._current is None:
            return None
        return api.LedgerInfo(
            self._current.ledger_id,
            self._current_entries,
            self._current_size,
            self._current_created_ms,
        )

    # -- adding entries ----------------------------------------------------------

    async def add_entry(self, data: bytes) -> api.Position:
        return await asyncio.shield(self.add_entry_future(data))

    def add_entry_future(self, data: bytes) -> asyncio.Future[api.Position]:
        """add_entry without a coroutine (the broker's publish path): a future resolved with
        the position once durable, in call order. Refusals raise at once; never cancel it."""
        self._check_writable()
        if len(self._queue) + len(self._inflight) >= PENDING_ADDS_MAX:
            raise errors.TooManyPendingAddsError(
                f"{self._name}: {PENDING_ADDS_MAX} adds are already pending"
            )
        op = _AddOp(data if type(data) is bytes else bytes(data), _loop().create_future(),
                    self.now_ms())
        self._queue.append(op)
        self._idle.clear()
        self._pump()
        return op.future

    def update_config(self, ml_config: config.ManagedLedgerConfig) -> None:
        """New settings (a namespace's retention changed, say) for the next decisions."""
        self.config = ml_config

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

    def _pump(self) -> None:
        """Send queued adds to the current ledger, or start a rollover when it is full."""
        while self._queue and self._state is State.OPEN and self._rollover_task is None:
            if self._current is None:
                break
            if self._current_broken or self._current_is_full():
                self._rollover_task = asyncio.ensure_future(self._rollover())
                return
            op = self._queue.popleft()
            self._initiated_entries += 1
            self._initiated_size += len(op.data)
            self._inflight.append(op)
            self._start_write(op, self._current)
        self._update_idle()

    def _start_write(self, op: _AddOp, handle: client_api.WriteHandle) -> None:
        """Hand the entry to the ledger; a handle with `append_future` needs no task per entry."""
        append_future: Callable[[bytes], asyncio.Future[int]] | None = getattr(
            handle, "append_future", None
        )
        if append_future is None:
            self._spawn(self._write(op, handle))
            return
        try:
            written = append_future(op.data)
        except Exception as exc:  # noqa: BLE001 - refused at once: the same as a failed write
            self._write_done(op, handle, None, exc)
            return
        written.add_done_callback(functools.partial(self._on_written, op, handle))

    def _on_written(
        self, op: _AddOp, handle: client_api.WriteHandle, written: asyncio.Future[int]
    ) -> None:
        if written.cancelled():
            self._write_done(op, handle, None, errors.ManagedLedgerWriteError("add cancelled"))
            return
        failure = written.exception()
        if failure is None:
            self._write_done(op, handle, written.result(), None)
        else:
            self._write_done(op, handle, None, failure)

    def _current_is_full(self) -> bool:
        if self._initiated_entries == 0:
            return False
        age_ms = self.now_ms() - self._current_created_ms
        max_age_ms = self.config.max_ledger_rollover_time_ms
        if max_age_ms > 0 and age_ms >= max_age_ms:
            return True
        space_full = (
            self._initiated_entries >= self.config.max_entries_per_ledger
            or self._initiated_size >= self.config.max_size_per_ledger_bytes
        )
        return space_full and age_ms >= self.config.min_ledger_rollover_time_ms

    async def _write(self, op: _AddOp, handle: client_api.WriteHandle) -> None:
        try:
            entry_id = await handle.append(op.data)
        except Exception as exc:  # noqa: BLE001 - any failure of the write breaks this ledger
            self._write_done(op, handle, None, exc)
            return
        self._write_done(op, handle, entry_id, None)

    def _write_done(
        self,
        op: _AddOp,
        handle: client_api.WriteHandle,
        entry_id: int | None,
        failure: BaseException | None,
    ) -> None:
        if failure is None:
            assert entry_id is not None
            op.position = api.Position(handle.ledger_id, entry_id)
        elif isinstance(failure, bookie_errors.LedgerFencedError):
            op.error = errors.ManagedLedgerFencedError(f"{self._name}: ledger fenced: {failure}")
            self.fence(f"ledger {handle.ledger_id} was fenced by another writer")
        else:
            op.error = errors.ManagedLedgerWriteError(f"{self._name}: add failed: {failure}")
            self._current_broken = True
        op.done = True
        self._complete_ready()

    def _complete_ready(self) -> None:
        """Finish adds in the order they were made, as soon as each is done."""
        added = False
        while self._inflight and self._inflight[0].done:
            op = self._inflight.popleft()
            if op.position is not None:
                self._current_entries += 1
                self._current_size += len(op.data)
                self.entries_added_counter += 1
                self._last_confirmed = op.position
                self._cache.insert(self._name, api.Entry(op.position, op.data))
                added = True
                _resolve(op.future, op.position)
            else:
                _fail(op.future, op.error or errors.ManagedLedgerWriteError("add failed"))
        if added:
            self.wake_readers()
        self._pump()

    def _update_idle(self) -> None:
        if not self._queue and not self._inflight and self._rollover_task is None:
            self._idle.set()
        else:
            self._idle.clear()

    async def wait_idle(self) -> None:
        """Until no add is queued or in flight and no rollover runs."""
        while not self._idle.is_set():
            await self._idle.wait()
            self._update_idle()

    async def _inflight_drained(self) -> None:
        while self._inflight:
            waiter = self._inflight[-1].future
            await asyncio.wait([waiter])

    # -- rollover ------------------------------------------------------------------

    async def check_ledger_rollover(self) -> None:
        """Roll over a current ledger that became too old even without new adds."""
        idle = self._state is State.OPEN and self._rollover_task is None
        if idle and self._current_is_full():
            self._rollover_task = asyncio.ensure_future(self._rollover())
        task = self._rollover_task
        if task is not None:
            await asyncio.shield(task)

    async def _rollover(self) -> None:
        old = self._current
        assert old is not None
        creating = asyncio.ensure_future(self._create_ledger())
        try:
            await self._inflight_drained()
            try:
                new = await creating
            except bookie_errors.NotEnoughBookiesError as exc:
                held = await self._create_ledger_while_adds_wait(exc)
                if held is None:
                    return
                new = held
            except bookie_errors.BookieError as exc:
                self._fail_queued(errors.ManagedLedgerWriteError(f"no new ledger: {exc}"))
                return
            try:
                switched = await self._switch_to(old, new)
            except errors.ManagedLedgerError as exc:
                # The metadata store failed (not a lost CAS): these adds fail, the next retries.
                self._fail_queued(errors.ManagedLedgerWriteError(f"rollover failed: {exc}"))
                switched = False
            if not switched:
                self._spawn(self._delete_ledger_quietly(new.ledger_id))
                return
            self._spawn(self._retire(old, self.layout.entries_of(old.ledger_id) or 0))
            self.schedule_trim()
        finally:
            self._rollover_task = None
            self._pump()

    async def _create_ledger_while_adds_wait(
        self, failure: bookie_errors.NotEnoughBookiesError
    ) -> client_api.WriteHandle | None:
        """No ledger can be created (not enough writable bookies): the queued adds wait
        while creation is retried with a growing pause, instead of failing at once and
        making their producers reconnect and resend in a tight loop. An add that waited
        managedLedgerAddEntryTimeoutSeconds fails. None when no add is left waiting (or
        the managed ledger is closing)."""
        log.warning("%s: cannot create a ledger, %d adds wait: %s", self._name,
                    len(self._queue), failure)
        pause_s = CREATE_RETRY_FIRST_S
        while True:
            self._expire_waiting_adds(failure)
            if not self._queue or self._state is not State.OPEN:
                return None
            if self._refusing_adds is not None:
                self._fail_queued(self._refusing_adds(f"{self._name} is closing"))
                return None
            await asyncio.sleep(min(pause_s, self._until_first_add_expires_s()))
            pause_s = min(pause_s * 2, CREATE_RETRY_MAX_S)
            try:
                return await self._create_ledger()
            except bookie_errors.NotEnoughBookiesError as exc:
                failure = exc
                log.warning("%s: still cannot create a ledger, %d adds wait: %s",
                            self._name, len(self._queue), exc)

    def _expire_waiting_adds(self, failure: BaseException) -> None:
        timeout_ms = self.config.add_entry_timeout_seconds * 1000
        if timeout_ms <= 0:
            return
        now = self.now_ms()
        while self._queue and now - self._queue[0].accepted_ms >= timeout_ms:
            _fail(self._queue.popleft().future, errors.ManagedLedgerWriteError(
                f"{self._name}: no ledger to write to for "
                f"{self.config.add_entry_timeout_seconds:g} s: {failure}"))
        self._update_idle()

    def _until_first_add_expires_s(self) -> float:
        timeout_ms = self.config.add_entry_timeout_seconds * 1000
        if timeout_ms <= 0 or not self._queue:
            return CREATE_RETRY_MAX_S
        left_ms = self._queue[0].accepted_ms + timeout_ms - self.now_ms()
        return max(0.0, left_ms / 1000)

    async def _create_ledger(self) -> client_api.WriteHandle:
        return await self._client.create_ledger(
            self.config.ensemble_size,
            self.config.write_quorum,
            self.config.ack_quorum,
            {MANAGED_LEDGER_TAG: self._name},
            self.password,
        )

    async def _switch_to(self, old: client_api.WriteHandle, new: client_api.WriteHandle) -> bool:
        """Persist the ledger list with the new ledger and make it current (False if fenced)."""
        async with self._metadata_lock:
            if self._state is not State.OPEN:
                return False
            now = self.now_ms()
            sealed = api.LedgerInfo(old.ledger_id, self._current_entries, self._current_size, now)
            kept = [sealed] if sealed.entries > 0 else []
            fresh = api.LedgerInfo(new.ledger_id, 0, 0, now)
            try:
                await self.write_ledger_list(self._closed_ledgers + kept + [fresh])
            except errors.ManagedLedgerFencedError:
                return False
            self._closed_ledgers.extend(kept)
            self.layout.close_open_ledger(sealed.entries)
            if not kept:
                self.layout.remove_ledger(old.ledger_id)
            self._start_ledger(new, now)
            return True

    def _start_ledger(self, handle: client_api.WriteHandle, now_ms: int) -> None:
        self._current = handle
        self._current_entries = self._current_size = 0
        self._initiated_entries = self._initiated_size = 0
        self._current_created_ms = now_ms
        self._current_broken = False
        self.layout.add_open_ledger(handle.ledger_id)
        self._reader.set_current(handle)
        if self._last_confirmed.ledger_id < 0:
            self._last_confirmed = api.Position(handle.ledger_id, -1)

    async def _retire(self, handle: client_api.WriteHandle, entries: int) -> None:
        """Seal a former current ledger; an empty one is deleted."""
        try:
            await handle.close()
        except bookie_errors.BookieError as exc:
            log.warning("%s: closing ledger %s failed: %s", self._name, handle.ledger_id, exc)
        if entries == 0:
            await self._delete_ledger_quietly(handle.ledger_id)

    async def write_ledger_list(self, ledgers: Iterable[api.LedgerInfo]) -> None:
        """CAS the ledger list; losing fences this managed ledger. Hold the metadata lock."""
        info = metadata.ManagedLedgerInfo(
            tuple(ledgers), self._terminated_position, dict(self._properties)
        )
        try:
            self._info_version = await self.meta.write_info(info, self._info_version)
        except errors.MetadataVersionError as exc:
            self.fence(str(exc))
            raise

    def fence(self, reason: str) -> None:
        if self._state in (State.CLOSED, State.DELETED, State.FENCED):
            return
        log.warning("%s fenced: %s", self._name, reason)
        self._state = State.FENCED
        self._fence_reason = reason
        self._fail_queued(errors.ManagedLedgerFencedError(f"{self._name} is fenced: {reason}"))

    def _fail_queued(self, error: errors.ManagedLedgerError) -> None:
        while self._queue:
            _fail(self._queue.popleft().future, error)
        self._update_idle()

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
            _resolve(waiter, None)

    def _check_usable(self) -> None:
        if self._state in (State.CLOSED, State.DELETED):
            raise errors.ManagedLedgerClosedError(f"{self._name} is closed")

    def schedule_trim(self) -> None:
        """Called after a rollover; trimming lives in ledger.py."""

    async def _delete_ledger_quietly(self, ledger_id: int) -> None:
        try:
            await self._client.delete_ledger(ledger_id)  # type: ignore[arg-type]
        except bookie_errors.BookieError as exc:
            log.warning("%s: deleting ledger %s failed: %s", self._name, ledger_id, exc)

    def _spawn(self, coroutine: Coroutine[object, object, None]) -> None:
        task = asyncio.ensure_future(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


_loop = asyncio.get_running_loop


def _runs(positions: Sequence[api.Position]) -> list[tuple[int, int, int]]:
    """Group positions into (ledger, first entry, last entry) runs of consecutive entries."""
    runs: list[tuple[int, int, int]] = []
    for position in positions:
        if runs and runs[-1][0] == position.ledger_id and runs[-1][2] + 1 == position.entry_id:
            runs[-1] = (runs[-1][0], runs[-1][1], position.entry_id)
        else:
            runs.append((position.ledger_id, position.entry_id, position.entry_id))
    return runs


def _resolve(future: asyncio.Future[api.Position] | asyncio.Future[None], value: object) -> None:
    if not future.done():
        future.set_result(value)  # type: ignore[arg-type]


def _fail(future: asyncio.Future[api.Position], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
