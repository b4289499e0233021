"""The add pipeline of a managed ledger: adds queued, written, completed in call order.

An add is accepted into a bounded queue (PENDING_ADDS_MAX with the ones in
flight), handed to the ledger its owner names when it may be written, and
completed strictly in the order adds were made, as soon as it and every
earlier add are done, whatever order the bookies answer in. The pipeline does
not know about ledger lists or rollover: its owner (an `AddTarget`) says
where an add goes now, or that adds must wait; it is told of each durable
entry and of each failed write, and says whether the add fails or is written
again: an add whose ledger broke (its writer gave up on a bookie) goes back
to the head of the queue, still ahead of every later add, and is written to
the next ledger, as Apache's managed ledger re-submits the pending adds of a
failed ledger. Such an add still fails once it waited the add timeout.
Each add that completes is counted (stats.py): its latency from add_entry to
completion and from its hand-over to the ledger to completion, in the clock's
whole milliseconds, and its size; each that fails too.

An idle pipeline holds no queue and no event (issue 16: CPython gives every
deque, an asyncio.Event's among them, its first block when it is made, some
760 bytes, and a broker holds a pipeline per topic): the queues exist while
they hold adds, the events while someone waits on them.
"""

from __future__ import annotations

import asyncio
import collections
import functools
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Protocol

from pulsar_bookie.client import api as client_api

from pulsar_broker.managed_ledger import api, errors, stats

#: Adds accepted but not yet completed (queued during a rollover or in flight) per managed
#: ledger; beyond it add_entry fails at once with a retriable TooManyPendingAddsError.
PENDING_ADDS_MAX = 100_000


@dataclass(eq=False)
class AddOp:
    data: bytes
    future: asyncio.Future[api.Position]
    #: When add_entry accepted it (now_ms), for managedLedgerAddEntryTimeoutSeconds.
    accepted_ms: int = 0
    #: When it was last handed to a ledger (now_ms).
    written_ms: int = 0
    position: api.Position | None = None
    error: BaseException | None = None
    done: bool = False
    #: Its ledger broke: to be written again on the next one.
    requeue: bool = False


class AddTarget(Protocol):
    """The owner of a pipeline: where adds go, and what becomes of them."""

    def handle_for(self, size_bytes: int) -> client_api.WriteHandle | None:
        """The ledger an add of this size is written to now (counted as started there),
        or None while adds must wait (a rollover runs, or adds are not taken)."""

    def write_failed(
        self, handle: client_api.WriteHandle, failure: BaseException
    ) -> errors.ManagedLedgerError | None:
        """A write to handle failed: react (fence, roll over) and say what the add gets,
        or None to write it again on the next ledger."""

    def entry_added(self, position: api.Position, data: bytes) -> None:
        """An add became durable, in call order."""

    def entries_added(self) -> None:
        """A run of completions ended with at least one durable entry (wake readers)."""


class AddPipeline:
    __slots__ = ("_drained", "_held", "_idle", "_inflight", "_name", "_now_ms", "_queue",
                 "_requeued", "_spawn", "_stats", "_target")

    def __init__(
        self,
        name: str,
        target: AddTarget,
        now_ms: Callable[[], int],
        spawn: Callable[[Coroutine[object, object, None]], None],
        ml_stats: stats.ManagedLedgerStats | None = None,
    ):
        self._name = name
        self._stats = ml_stats if ml_stats is not None else stats.ManagedLedgerStats()
        self._target = target
        self._now_ms = now_ms
        self._spawn = spawn
        #: Adds not handed to a ledger yet, oldest first; None when there is none.
        self._queue: collections.deque[AddOp] | None = None
        #: How many adds at the head of the queue came back from a broken ledger.
        self._requeued = 0
        #: Adds handed to a ledger and not completed, in call order; None when there is none.
        self._inflight: collections.deque[AddOp] | None = None
        #: Set (and dropped) when the last add in flight completes; made by a waiter.
        self._drained: asyncio.Event | None = None
        #: Set (and dropped) when the pipeline becomes idle; made by a waiter.
        self._idle: asyncio.Event | None = None
        #: Whether something besides adds (a rollover) keeps the pipeline busy.
        self._held = False

    @property
    def waiting(self) -> int:
        """Adds queued, not yet handed to a ledger."""
        return len(self._queue) if self._queue else 0

    @property
    def in_flight(self) -> bool:
        return bool(self._inflight)

    @property
    def requeued(self) -> int:
        """Adds waiting to be written again after their ledger broke."""
        return self._requeued

    def accept(self, data: bytes) -> asyncio.Future[api.Position]:
        queue = self._queue
        inflight = self._inflight
        pending = (len(queue) if queue else 0) + (len(inflight) if inflight else 0)
        if pending >= PENDING_ADDS_MAX:
            raise errors.TooManyPendingAddsError(
                f"{self._name}: {PENDING_ADDS_MAX} adds are already pending"
            )
        op = AddOp(data if type(data) is bytes else bytes(data),
                   asyncio.get_running_loop().create_future(), self._now_ms())
        if queue is None:
            # Nothing waits ahead of it: write it at once if a ledger takes it.
            handle = self._target.handle_for(len(op.data))
            if handle is not None:
                self._hand_over(op, handle, op.accepted_ms)
                return op.future
            queue = self._queue = collections.deque()
        queue.append(op)
        self.pump(op.accepted_ms)
        return op.future

    def pump(self, now_ms: int | None = None) -> None:
        """Hand queued adds to the ledger the target names, while it names one (now_ms: the
        clock's time if the caller just read it)."""
        while self._queue:
            handle = self._target.handle_for(len(self._queue[0].data))
            if handle is None:
                break
            op = self._pop_queued()
            if now_ms is None:
                now_ms = self._now_ms()
            self._hand_over(op, handle, now_ms)
        self.update_idle()

    def _hand_over(self, op: AddOp, handle: client_api.WriteHandle, now_ms: int) -> None:
        op.written_ms = now_ms
        inflight = self._inflight
        if inflight is None:
            inflight = self._inflight = collections.deque()
        inflight.append(op)
        self._start_write(op, handle)

    def _pop_queued(self) -> AddOp:
        """The oldest queued add (the queue holds one); the queue goes once it is empty."""
        queue = self._queue
        assert queue is not None
        if self._requeued:
            self._requeued -= 1
        op = queue.popleft()
        if not queue:
            self._queue = None
        return op

    def hold(self, held: bool) -> None:
        """Keep wait_idle waiting (a rollover runs) or let it go."""
        self._held = held
        self.update_idle()

    def _start_write(self, op: AddOp, handle: client_api.WriteHandle) -> None:
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
        self, op: AddOp, handle: client_api.WriteHandle, written: asyncio.Future[int]
    ) -> None:
        if written.cancelled():
            self._write_done(op, handle, None, errors.ManagedLedgerWriteError("add cancelled"))
            return
        failure = written.exception()
        if failure is None:
            self._write_done(op, handle, written.result(), None)
        else:
            self._write_done(op, handle, None, failure)

    async def _write(self, op: AddOp, handle: client_api.WriteHandle) -> None:
        try:
            entry_id = await handle.append(op.data)
        except Exception as exc:  # noqa: BLE001 - any failure of the write breaks this ledger
            self._write_done(op, handle, None, exc)
            return
        self._write_done(op, handle, entry_id, None)

    def _write_done(
        self,
        op: AddOp,
        handle: client_api.WriteHandle,
        entry_id: int | None,
        failure: BaseException | None,
    ) -> None:
        if failure is None:
            assert entry_id is not None
            op.position = api.Position(handle.ledger_id, entry_id)
        else:
            op.error = self._target.write_failed(handle, failure)
            op.requeue = op.error is None
        op.done = True
        self._complete_ready()

    def _complete_ready(self) -> None:
        """Finish adds in the order they were made, as soon as each is done."""
        added = False
        now_ms: int | None = None
        inflight = self._inflight
        while inflight and inflight[0].done:
            op = inflight.popleft()
            if op.requeue:
                # Behind the adds requeued before it, ahead of every add made later.
                op.requeue = op.done = False
                if self._queue is None:
                    self._queue = collections.deque()
                self._queue.insert(self._requeued, op)
                self._requeued += 1
            elif op.position is not None:
                if now_ms is None:
                    now_ms = self._now_ms()
                self._stats.add_succeeded(
                    now_ms - op.accepted_ms, now_ms - op.written_ms, len(op.data))
                self._target.entry_added(op.position, op.data)
                added = True
                resolve(op.future, op.position)
            else:
                self._stats.add_errors += 1
                fail(op.future, op.error or errors.ManagedLedgerWriteError("add failed"))
        if not inflight:
            self._inflight = None
            if self._drained is not None:
                self._drained.set()
                self._drained = None
        if added:
            self._target.entries_added()
        self.pump(now_ms)

    def fail_queued(self, error: errors.ManagedLedgerError) -> None:
        """Fail every add not yet handed to a ledger."""
        while self._queue:
            self._stats.add_errors += 1
            fail(self._pop_queued().future, error)
        self.update_idle()

    def expire_waiting(self, timeout_ms: int, failure: BaseException) -> None:
        """Fail queued adds that waited timeout_ms (managedLedgerAddEntryTimeoutSeconds)."""
        if timeout_ms <= 0:
            return
        now = self._now_ms()
        while self._queue and now - self._queue[0].accepted_ms >= timeout_ms:
            self._stats.add_errors += 1
            fail(self._pop_queued().future, errors.ManagedLedgerWriteError(
                f"{self._name}: no ledger to write to for {timeout_ms / 1000:g} s: {failure}"))
        self.update_idle()

    def until_first_expires_ms(self, timeout_ms: int) -> int | None:
        """How long the oldest queued add may still wait; None without a limit or an add."""
        if timeout_ms <= 0 or not self._queue:
            return None
        return max(0, self._queue[0].accepted_ms + timeout_ms - self._now_ms())

    def _is_idle(self) -> bool:
        return not self._queue and not self._inflight and not self._held

    def update_idle(self) -> None:
        """Wake whoever waits for the pipeline to become idle, if it is."""
        if self._idle is not None and self._is_idle():
            self._idle.set()
            self._idle = None

    async def wait_idle(self) -> None:
        """Until no add is queued or in flight and nothing holds the pipeline."""
        while not self._is_idle():
            if self._idle is None:
                self._idle = asyncio.Event()
            await self._idle.wait()

    async def inflight_drained(self) -> None:
        """Until every add handed to a ledger so far is done (or back in the queue)."""
        while self._inflight:
            if self._drained is None:
                self._drained = asyncio.Event()
            await self._drained.wait()


def resolve(future: asyncio.Future[api.Position], value: api.Position) -> None:
    if not future.done():
        future.set_result(value)


def fail(future: asyncio.Future[api.Position], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
