"""Group commit for the embedded metadata store: many operations, one WAL sync.

A synced RocksDB write costs an fdatasync (about a millisecond on a busy
disk), and a new topic takes three metadata writes one after another (a
ledger id, the ledger's metadata, the managed ledger's record). Synced one at
a time on one thread, those syncs were the ceiling of topic creation. So,
as the bookie journal does for entries, the commit thread takes every
operation that is waiting, runs them one after another (each read-check-write
still atomic, as on one thread), writes them to the WAL without syncing, then
makes them all durable with one sync, and only then answers their callers
and delivers their watch notifications. Operations that arrive during a sync
form the next group; an operation that arrives alone is synced alone, with
no added wait.

Nothing is answered before the sync that covers it: RocksDB makes an
unsynced write visible to later reads at once, so a read that ran after a
write of its group is held back with that write, or a caller could act on
metadata a crash would then lose. A sync that fails fails its group and
every later operation (`failed`): what the group wrote may be visible but
not durable, and only a restart, which reopens the database from its WAL,
settles what was kept.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import logging
import threading
from collections.abc import Callable
from typing import TypeVar, cast

from pulsar_common.metadata import errors

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Operations one group runs before it syncs and answers them; the rest form the next group.
GROUP_OPERATIONS_MAX = 1000
#: Operations waiting for the commit thread; beyond it a call fails at once with a
#: retriable error instead of queueing without bound behind a slow disk.
QUEUED_OPERATIONS_MAX = 100_000


@dataclasses.dataclass(frozen=True)
class _Call:
    operation: Callable[[], object]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[object]


# An answer for one call: (future, failure or None, result).
_Answer = tuple["asyncio.Future[object]", BaseException | None, object]


class CommitThread:
    """Runs operations on one thread; each group of them is answered after one `sync`."""

    def __init__(self, sync: Callable[[], None], name: str,
                 group_operations_max: int = GROUP_OPERATIONS_MAX,
                 queued_operations_max: int = QUEUED_OPERATIONS_MAX) -> None:
        if group_operations_max < 1 or queued_operations_max < 1:
            raise ValueError("group_operations_max and queued_operations_max must be at least 1")
        self._sync = sync
        self._group_operations_max = group_operations_max
        self._queued_operations_max = queued_operations_max
        self._queue: collections.deque[_Call] = collections.deque()
        self._wake = threading.Condition()
        self._stopping = False
        self._written = False
        self._after_sync: list[Callable[[], None]] = []
        self.failed: errors.MetadataStoreError | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    async def run(self, operation: Callable[[], T]) -> T:
        """operation's result once the sync covering its group is done; errors as
        MetadataStoreError (RocksDB's own errors wrapped)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[object] = loop.create_future()
        with self._wake:
            if self.failed is not None:
                raise errors.MetadataStoreError(str(self.failed)) from self.failed
            if self._stopping:
                raise errors.StoreClosedError("metadata store is closed")
            if len(self._queue) >= self._queued_operations_max:
                raise errors.StoreUnavailableError(
                    f"{self._queued_operations_max} metadata operations are already waiting")
            self._queue.append(_Call(operation, loop, future))
            self._wake.notify()
        return cast(T, await future)

    def written(self) -> None:
        """Called by an operation (on this thread) that wrote: its group needs a sync."""
        self._written = True

    def after_sync(self, action: Callable[[], None]) -> None:
        """Run action (on this thread) once the current group is durable, before its
        callers are answered; dropped if the sync fails. For watch notifications."""
        self._after_sync.append(action)

    def stop(self) -> None:
        """Run what is queued, then end the thread."""
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join()

    def _run(self) -> None:
        while calls := self._take():
            self._answer(self._commit(calls))

    def _take(self) -> list[_Call]:
        """The next group (waits for one); empty once stopped and drained."""
        with self._wake:
            while not self._queue and not self._stopping:
                self._wake.wait()
            count = min(len(self._queue), self._group_operations_max)
            return [self._queue.popleft() for _ in range(count)]

    def _commit(self, calls: list[_Call]) -> list[tuple[_Call, BaseException | None, object]]:
        outcomes = [(call, *_outcome(call.operation)) for call in calls]
        if not self._written:
            return outcomes
        self._written = False
        actions, self._after_sync = self._after_sync, []
        sync_error, _ = _outcome(self._sync)
        if sync_error is not None:
            failed = errors.MetadataStoreError(f"syncing the metadata WAL failed: {sync_error}")
            failed.__cause__ = sync_error
            log.error("%s; the metadata store refuses operations until restarted", failed)
            with self._wake:
                self.failed = failed
                queued = list(self._queue)
                self._queue.clear()
            return [(call, failed, None) for call in calls + queued]
        for action in actions:
            try:
                action()
            except Exception:  # a notification must not stop the thread every caller waits on
                log.exception("delivering a metadata notification failed")
        return outcomes

    @staticmethod
    def _answer(outcomes: list[tuple[_Call, BaseException | None, object]]) -> None:
        """Settle the futures: one wake-up per event loop for the whole group."""
        by_loop: dict[asyncio.AbstractEventLoop, list[_Answer]] = {}
        for call, failure, result in outcomes:
            by_loop.setdefault(call.loop, []).append((call.future, failure, result))
        for loop, answers in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, answers)
            except RuntimeError:
                pass  # the caller's event loop is closed: nobody is waiting any more


def _outcome(operation: Callable[[], object]) -> tuple[BaseException | None, object]:
    try:
        return None, _guarded(operation)
    except errors.MetadataStoreError as exc:
        return exc, None


def _guarded(operation: Callable[[], T]) -> T:
    try:
        return operation()
    except errors.MetadataStoreError:
        raise
    except Exception as exc:
        raise errors.MetadataStoreError(f"RocksDB operation failed: {exc}") from exc


def _settle(answers: list[_Answer]) -> None:
    for future, failure, result in answers:
        if future.done():
            continue  # the caller gave up (cancelled)
        if failure is not None:
            future.set_exception(failure)
        else:
            future.set_result(result)

