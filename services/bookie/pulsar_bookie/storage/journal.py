"""The journal: an append-only log of adds, fences and master keys with group commit.

Every record is appended here before its add is acknowledged. With
journalSyncData on, one writer thread per journal takes all records that are
waiting, writes them (see direct writes below) and makes them durable with one
`fdatasync` (group commit), then wakes their waiters on the event loop with
one call. The event loop keeps accepting adds while the thread waits for the
disk. A batch is written when its oldest record has waited
journalMaxGroupWaitMSec, when it holds journalBufferedWritesThreshold bytes or
journalBufferedEntriesThreshold records, or (journalFlushWhenQueueEmpty) as
soon as nothing else is waiting. The group wait is adaptive
(journalAdaptiveGroupWrites, on by default): it applies only while adds pile up (several records were waiting when the previous sync
ended); a lone add, such as the next one of a producer that waits for each
acknowledgement, is written and synced at once, since no company is coming
for it to wait for (a checkpoint's log-mark request or a ledger's master key
record queued beside it is no company: only adds count). Records that arrive during a sync form the next batch
either way. A batch that is full does not leave behind records already
queued: up to SYNC_GROUP_MAX_BATCHES batches' worth share its sync (a deep
queue of large adds then costs one fdatasync per few MB rather than per
journalBufferedWritesThreshold).

With journalSyncData on, files are written with O_DIRECT (journalDirectWrites,
on by default): the batch's buffers are copied into one page-aligned staging
buffer behind the bytes of the file's last, partly filled block and written
in whole blocks of records.DIRECT_WRITE_ALIGNMENT bytes, the last one padded
with zeros (a scan takes zeros there for the end of the records) and written
again, extended, by the next batch. Journal bytes are read back only by replay
and by reads of entries kept in the journal, so caching them is of little use,
and a buffered write's copy into newly allocated page cache was most of the
journal thread's time (bench/README.md). A filesystem that refuses O_DIRECT
(at open, or at a new file's first write; tmpfs on older kernels) gets
ordinary writes, as journalDirectWrites=false does: one `writev` over the
records' buffers (an add's payload is one of them, never copied into a
batch).

With journalSyncData off there is no sync to share or wait for, and so no
group wait and no writer thread: the event loop itself writes all records
queued during one loop iteration with one `writev` (to the page cache) and
completes their futures in the same call. That saves the two thread hand-offs
an add would otherwise cost, which were most of an unbatched add's latency.

Either way at most journalQueueSize records wait; further appends wait for
room.

An add record of at least journalResidentEntryMinBytes has its place (file id,
offset, size) noted once it is written (and synced): the next checkpoint takes
these places (`take_resident`) and points the index at the journal record
instead of copying the entry to an entry log. Files holding such entries are
kept past the checkpoint (`delete_files_before`'s `keep`) until garbage
collection finds their entries' ledgers deleted or moves the entries.

A "log mark" (file id, offset) names a position. `request_mark` returns the
position just after every record appended before the call; once those records
are persisted elsewhere (entry logs + index), the journal is only needed from
that mark on and older files are deleted. Replay after a crash reads from a
mark, truncates a torn tail and returns the records found.

A write or sync that fails fails its batch and every record queued behind it,
and the journal refuses appends from then on (`failed`). When the failure was
a lack of space (ENOSPC, EDQUOT) it is `recoverable`: `recover` continues in
a fresh file once the caller has seen room again, leaving the failed file as
it is. Nothing acknowledged is in doubt: every acknowledged record was synced
before the failed batch, the failed batch's records were never acknowledged
(any of them that reached the file are replayed like any unacknowledged add),
and a torn tail is cut per file, so the old file's torn end never hides the
records of the files after it. Any other error (EIO, a failed fdatasync
whose pages the kernel may have dropped) leaves the journal failed for good:
the bookie must be restarted, which replays it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import errno
import logging
import mmap
import os
import pathlib
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence

from pulsar_bookie import errors
from pulsar_bookie.storage import records

log = logging.getLogger(__name__)

SUFFIX = ".txn"

#: Errors after which the journal can go on in a fresh file once there is room again.
RECOVERABLE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def is_recoverable(failure: BaseException) -> bool:
    """Whether a journal that failed with this error may write again (lack of space only)."""
    return isinstance(failure, OSError) and failure.errno in RECOVERABLE_ERRNOS


@dataclasses.dataclass(frozen=True, order=True)
class LogMark:
    file_id: int
    offset: int


@dataclasses.dataclass(frozen=True)
class JournalSettings:
    sync_data: bool = True
    max_group_wait_s: float = 0.001
    max_batch_bytes: int = 512 * 1024
    max_batch_records: int = 10000
    flush_when_queue_empty: bool = False
    #: journalAdaptiveGroupWrites: the group wait only while adds pile up (see the module doc).
    adaptive_group_wait: bool = True
    queue_size: int = 10000
    max_file_size: int = 2048 * 1024 * 1024
    #: journalResidentEntryMinBytes: adds whose payload is at least this large have their
    #: place noted for `take_resident`; 0 notes none.
    resident_min_bytes: int = 0
    #: journalDirectWrites: with sync_data, files are written with O_DIRECT (module doc).
    direct_writes: bool = True


@dataclasses.dataclass
class JournalStats:
    """Counters a benchmark or test can read (written by the journal thread only)."""

    records: int = 0
    batches: int = 0
    fsyncs: int = 0
    #: Time spent in fdatasync, summed (divided by fsyncs: the mean sync latency).
    fsync_seconds: float = 0.0
    bytes: int = 0


# A queued item: (record parts, record size, future, enqueue time). Mark requests have no parts.
_Item = tuple[tuple[bytes, ...], int, "asyncio.Future[object]", float]
#: Anything a record is appended as: its bytes, or the buffers that make it up in order.
Record = bytes | records.Parts
#: Most batches' worth (journalBufferedWritesThreshold bytes or journalBufferedEntriesThreshold
#: records each) of already queued records that one write and fdatasync takes.
SYNC_GROUP_MAX_BATCHES = 4
#: Where a record is: (file id, offset, record size).
Place = tuple[int, int, int]
#: Buffers per writev call (the kernel's IOV_MAX).
IOV_MAX = os.sysconf("SC_IOV_MAX")
#: The aligned buffer direct writes go through: a sync group's worth (SYNC_GROUP_MAX_BATCHES
#: x journalBufferedWritesThreshold's default) plus room; a larger batch goes through it in turns.
DIRECT_WRITE_BUFFER_BYTES = 4 * 1024 * 1024
_ZEROS = bytes(records.DIRECT_WRITE_ALIGNMENT)


def file_path(directory: pathlib.Path, file_id: int) -> pathlib.Path:
    """Where a journal keeps the file of this id."""
    return directory / f"{file_id:016x}{SUFFIX}"


def fsync_directory(path: pathlib.Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, buffers: Sequence[bytes]) -> None:
    """Write the buffers in order, without joining them: one `writev` per IOV_MAX buffers.

    A short write (a disk filling up) goes on from the byte where it stopped.
    """
    pending: list[bytes | memoryview] = list(buffers)
    index, count = 0, len(pending)
    while index < count:
        chunk = pending[index : index + IOV_MAX]
        written = os.writev(fd, chunk)
        for buffer in chunk:
            size = len(buffer)
            if written < size:
                pending[index] = memoryview(buffer)[written:]
                break
            written -= size
            index += 1


class Journal:
    def __init__(self, directory: pathlib.Path, settings: JournalSettings) -> None:
        self.directory = directory
        self.settings = settings
        self.stats = JournalStats()
        self._queue: collections.deque[_Item] = collections.deque()
        self._wake = threading.Event()
        self._stopping = False
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fd = -1
        self._file_id = 0
        self._file_size = 0
        self._queued = 0
        self._room_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        # Without sync the loop writes the records itself (see the module docstring).
        self._inline = not settings.sync_data
        self._inline_scheduled = False
        #: Whether records were waiting when the previous batch was done: adds keep arriving.
        self._busy = False
        #: Called on the event loop each time a batch fails (the journal is `failed` then).
        self.on_failure: Callable[[BaseException], None] | None = None
        #: (ledger, entry) -> place of large adds written since the last `take_resident`,
        #: in file order (written by the writer, taken by the flush thread).
        self._resident: dict[tuple[int, int], Place] = {}
        self._resident_lock = threading.Lock()
        #: Whether the current file is written with O_DIRECT, through `_staging` (page
        #: aligned, made on first use); `_tail` holds the bytes of the file's last, partly
        #: filled block, written again at the start of the next batch.
        self._direct = False
        self._staging: mmap.mmap | None = None
        self._tail = b""

    # ----- files -----

    def file_ids(self) -> list[int]:
        ids = []
        for path in self.directory.glob("*" + SUFFIX):
            with contextlib.suppress(ValueError):
                ids.append(int(path.stem, 16))
        return sorted(ids)

    def _path(self, file_id: int) -> pathlib.Path:
        return file_path(self.directory, file_id)

    def delete_files_before(self, file_id: int, keep: frozenset[int] = frozenset()) -> int:
        """Delete journal files wholly before the mark's file, except those in `keep` (they
        hold entries the index points at); returns how many."""
        removed = 0
        for old in self.file_ids():
            if old < file_id and old != self._file_id and old not in keep:
                self._path(old).unlink(missing_ok=True)
                removed += 1
        return removed

    def replay(self, mark: LogMark) -> Iterator[records.JournalRecord]:
        """Records from mark on, oldest first; torn tails are cut off the files."""
        for file_id in self.file_ids():
            if file_id < mark.file_id:
                continue
            start = mark.offset if file_id == mark.file_id else 0
            yield from self._replay_file(file_id, start)

    def _replay_file(self, file_id: int, start: int) -> Iterator[records.JournalRecord]:
        path = self._path(file_id)
        size = path.stat().st_size
        if size <= start:
            return
        result = records.ScanResult()
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            for _, body in records.scan(data, start, result):
                yield records.decode_journal_body(body)
        if result.torn:
            log.warning(
                "journal %s: torn tail at %d of %d bytes, truncating", path, result.valid_end, size
            )
            with open(path, "r+b") as torn:
                torn.truncate(result.valid_end)
                os.fsync(torn.fileno())

    # ----- life cycle -----

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Open a fresh journal file after the existing ones and start the writer thread."""
        self._loop = loop
        existing = self.file_ids()
        self._open_file((existing[-1] + 1) if existing else 1)
        if self._inline:
            return
        self._thread = threading.Thread(
            target=self._run, name=f"journal-{self.directory.parent.name}", daemon=True
        )
        self._thread.start()

    def _open_file(self, file_id: int) -> None:
        path = self._path(file_id)
        direct = self.settings.direct_writes and self.settings.sync_data
        fd = -1
        if direct:
            try:
                # No O_APPEND: with it Linux writes at the end whatever offset pwrite names.
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o644)
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                log.info("journal %s: the filesystem refuses O_DIRECT; writing through the "
                         "page cache", self.directory)
                direct = False
        if not direct:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            fsync_directory(self.directory)
        except BaseException:
            os.close(fd)
            raise
        if self._fd >= 0:
            os.close(self._fd)
        if direct and self._staging is None:
            self._staging = mmap.mmap(-1, DIRECT_WRITE_BUFFER_BYTES)
        self._fd, self._file_id, self._file_size = fd, file_id, 0
        self._direct, self._tail = direct, b""

    async def close(self) -> None:
        """Write and sync what is queued, then stop the thread and close the file."""
        self._stopping = True
        self._wake.set()
        if self._inline:
            self._write_inline()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
            self._thread = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def queued(self) -> int:
        """Records waiting for the journal thread or for their sync."""
        return self._queued

    @property
    def current_file_id(self) -> int:
        return self._file_id

    # ----- failure and recovery -----

    @property
    def failure(self) -> BaseException | None:
        """The error that stopped the journal, or None while it takes appends."""
        return self._failure

    @property
    def recoverable(self) -> bool:
        """Whether a failed journal may write again (`recover`) rather than need a restart."""
        return self._failure is None or is_recoverable(self._failure)

    def _fail(self, exc: OSError) -> None:
        """Refuse appends from now on (called by whoever was writing)."""
        log.error("journal %s: write failed (%s); %s", self.directory, exc,
                  "it takes appends again once there is room" if is_recoverable(exc)
                  else "the bookie must be restarted")
        self._failure = exc

    async def recover(self) -> bool:
        """After a failure for lack of space, go on in a fresh file; True once appends work.

        Call it only once the journal's disk has room again. The failed file is left as
        it is (replay cuts its torn tail); no record is written to it again.
        """
        failure = self._failure
        if failure is None:
            return True
        if not is_recoverable(failure) or self._stopping:
            return False
        try:
            # Nothing writes to the file while failed: appends are refused meanwhile.
            await asyncio.to_thread(self._open_file, self._file_id + 1)
        except OSError as exc:
            log.warning("journal %s: still cannot open a new file: %s", self.directory, exc)
            return False
        log.warning("journal %s: writing again, in file %x", self.directory, self._file_id)
        self._failure = None
        return True

    # ----- appending (event loop side) -----

    def append_nowait(self, record: Record) -> asyncio.Future[object]:
        """Queue a record; the future completes once it is durable (ignores queue room)."""
        if isinstance(record, bytes):
            return self._enqueue((record,), len(record))
        head, payload = record
        return self._enqueue((head, payload), len(head) + len(payload))

    def _enqueue(self, parts: tuple[bytes, ...], size: int) -> asyncio.Future[object]:
        if self._failure is not None:
            raise errors.BookieUnavailableError("journal failed") from self._failure
        if self._stopping:
            raise errors.StorageClosedError("journal is closed")
        assert self._loop is not None
        future: asyncio.Future[object] = self._loop.create_future()
        self._queue.append((parts, size, future, time.monotonic()))
        self._queued += 1
        if self._inline:
            if not self._inline_scheduled:
                self._inline_scheduled = True
                self._loop.call_soon(self._write_inline)
        elif not self._wake.is_set():
            self._wake.set()
        return future

    @property
    def queue_full(self) -> bool:
        """Whether `append` would wait for queue room."""
        return self._queued >= self.settings.queue_size

    def append(self, record: Record) -> Awaitable[object]:
        """Queue a record; await the result to wait until it is durable (waits for queue room first)."""
        if self._queued >= self.settings.queue_size:
            return self._append_with_room(record)
        return self.append_nowait(record)

    async def _append_with_room(self, record: Record) -> object:
        await self._wait_for_room()
        return await self.append_nowait(record)

    async def _wait_for_room(self) -> None:
        assert self._loop is not None
        while self._queued >= self.settings.queue_size:
            waiter: asyncio.Future[None] = self._loop.create_future()
            self._room_waiters.append(waiter)
            await waiter

    def take_resident(self, mark: LogMark) -> list[tuple[tuple[int, int], Place]]:
        """The places of the large adds written before the mark ((ledger, entry), place),
        forgotten here: a checkpoint up to that mark points the index at them."""
        taken: list[tuple[tuple[int, int], Place]] = []
        with self._resident_lock:
            for key, place in self._resident.items():
                if (place[0], place[1]) >= (mark.file_id, mark.offset):
                    break
                taken.append((key, place))
            for key, _ in taken:
                del self._resident[key]
        return taken

    def request_mark(self) -> asyncio.Future[object]:
        """A future for the LogMark just after every record queued so far."""
        return self._enqueue((), 0)

    def _complete(
        self,
        items: list[_Item],
        marks: list[tuple[asyncio.Future[object], LogMark]],
        failure: BaseException | None,
    ) -> None:
        for future, mark in marks:
            if not future.done():
                future.set_result(mark)
        for _, _, future, _ in items:
            if future.done():
                continue
            if failure is None:
                future.set_result(None)
            else:
                future.set_exception(
                    errors.BookieUnavailableError(f"journal write failed: {failure}")
                )
        self._queued -= len(items)
        if failure is not None and self.on_failure is not None:
            self.on_failure(failure)
        while self._room_waiters and self._queued < self.settings.queue_size:
            waiter = self._room_waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    # ----- writing on the event loop (journalSyncData off) -----

    def _write_inline(self) -> None:
        """Write every queued record with one `write` and complete their futures."""
        self._inline_scheduled = False
        if not self._queue:
            return
        items = list(self._queue)
        self._queue.clear()
        if self._failure is not None:
            self._complete(items, [], self._failure)
            return
        try:
            marks = self._write(items)
        except OSError as exc:
            self._fail(exc)
            self._complete(items, [], exc)
            return
        self._complete(items, marks, None)

    # ----- the writer thread -----

    def _run(self) -> None:
        queue = self._queue
        while True:
            if not queue:
                self._wake.clear()
                if not queue:
                    if self._stopping:
                        break
                    self._wake.wait()
                    continue
            failure = self._failure
            if failure is not None:
                # Records that raced with the failure: fail them too, then wait for recovery.
                self._fail_rest(failure)
                continue
            items = self._collect()
            try:
                marks = self._write(items)
            except OSError as exc:
                self._fail(exc)
                self._notify(items, [], exc)
                self._fail_rest(exc)
                continue
            self._notify(items, marks, None)
            self._busy = bool(queue)

    def _notify(
        self,
        items: list[_Item],
        marks: list[tuple[asyncio.Future[object], LogMark]],
        failure: BaseException | None,
    ) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop was closed under us
            self._loop.call_soon_threadsafe(self._complete, items, marks, failure)

    def _fail_rest(self, exc: BaseException) -> None:
        while self._queue:
            items = [self._queue.popleft() for _ in range(len(self._queue))]
            self._notify(items, [], exc)

    def _collect(self) -> list[_Item]:
        """Take records for one batch, waiting up to the group wait for more."""
        queue = self._queue
        settings = self.settings
        items: list[_Item] = []
        size = 0
        #: Adds among the items (two parts: head and payload). A mark request, or the master
        #: key record a ledger's first add brings along, is no company for a lone add.
        adds = 0
        deadline = queue[0][3] + settings.max_group_wait_s
        while True:
            while (
                queue
                and len(items) < settings.max_batch_records
                and size < settings.max_batch_bytes
            ):
                item = queue.popleft()
                items.append(item)
                size += item[1]
                if len(item[0]) == 2:
                    adds += 1
            if len(items) >= settings.max_batch_records or size >= settings.max_batch_bytes:
                # Full. Records already queued behind it would wait for a sync of their own:
                # they join this one (never waiting for more), as BookKeeper's force-write
                # thread syncs all that was written meanwhile with one call.
                most_records = settings.max_batch_records * SYNC_GROUP_MAX_BATCHES
                most_bytes = settings.max_batch_bytes * SYNC_GROUP_MAX_BATCHES
                while queue and len(items) < most_records and size < most_bytes:
                    item = queue.popleft()
                    items.append(item)
                    size += item[1]
                return items
            if self._stopping or (settings.flush_when_queue_empty and not queue):
                return items
            if not queue and settings.adaptive_group_wait and not (self._busy and adds > 1):
                # Company is expected only while several adds keep piling up.
                return items
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return items
            self._wake.clear()
            if not queue:
                self._wake.wait(remaining)

    def _write(self, items: list[_Item]) -> list[tuple[asyncio.Future[object], LogMark]]:
        buffers: list[bytes] = []
        marks = []
        resident: list[tuple[tuple[int, int], Place]] = []
        resident_min = self.settings.resident_min_bytes or records.MAX_RECORD_SIZE + 1
        offset = self._file_size
        for parts, record_size, future, _ in items:
            if record_size:
                # An add's parts are its head and its payload (other records are one part).
                if record_size >= resident_min and len(parts[-1]) >= resident_min:
                    ids = records.add_entry_ids(parts[0])
                    if ids is not None:
                        resident.append((ids, (self._file_id, offset, record_size)))
                buffers += parts
                offset += record_size
            else:
                marks.append((future, LogMark(self._file_id, offset)))
        size = offset - self._file_size
        if not self._direct:
            write_all(self._fd, buffers)
        elif size and self._file_size:
            self._write_direct(buffers)
        elif size:
            self._write_first_direct(buffers)
        if self.settings.sync_data and size:
            started = time.perf_counter()
            os.fdatasync(self._fd)
            self.stats.fsync_seconds += time.perf_counter() - started
            self.stats.fsyncs += 1
        if resident:
            with self._resident_lock:
                for key, place in resident:
                    # A key written again moves to the end: the dict stays in file order.
                    self._resident.pop(key, None)
                    self._resident[key] = place
        self._file_size += size
        self.stats.batches += 1
        self.stats.records += len(items) - len(marks)
        self.stats.bytes += size
        if self._file_size >= self.settings.max_file_size:
            os.fsync(self._fd)
            self._open_file(self._file_id + 1)
        return marks

    def _write_first_direct(self, buffers: Sequence[bytes]) -> None:
        """A file's first write: a filesystem that takes O_DIRECT opens but refuses its
        writes (EINVAL) gets the file reopened for ordinary writes (nothing is in it yet)."""
        try:
            self._write_direct(buffers)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
            log.info("journal %s: the filesystem refuses O_DIRECT writes; writing through "
                     "the page cache", self.directory)
            fd = os.open(self._path(self._file_id), os.O_WRONLY | os.O_APPEND, 0o644)
            os.close(self._fd)
            self._fd, self._direct, self._tail = fd, False, b""
            write_all(self._fd, buffers)

    def _write_direct(self, buffers: Sequence[bytes]) -> None:
        """Write the buffers after the file's last record with O_DIRECT: copied behind the
        tail (the last block's bytes already written) into the staging buffer and written in
        whole blocks, the last one padded with zeros (the next batch writes it again).

        A block written again holds the same bytes up to the old end, so a write torn by a
        crash leaves the records acknowledged before it as they were.
        """
        staging = self._staging
        assert staging is not None
        capacity = len(staging)
        tail = self._tail
        position = self._file_size - len(tail)
        filled = len(tail)
        staging[:filled] = tail
        for buffer in buffers:
            with memoryview(buffer) as view:
                taken, size = 0, len(view)
                while taken < size:
                    step = min(capacity - filled, size - taken)
                    staging[filled : filled + step] = view[taken : taken + step]
                    filled += step
                    taken += step
                    if filled == capacity:
                        self._pwrite_all(capacity, position)
                        position += capacity
                        filled = 0
        alignment = records.DIRECT_WRITE_ALIGNMENT
        whole = filled - filled % alignment
        padded = whole if whole == filled else whole + alignment
        staging[filled:padded] = _ZEROS[: padded - filled]
        if padded:
            self._pwrite_all(padded, position)
        self._tail = staging[whole:filled]

    def _pwrite_all(self, size: int, position: int) -> None:
        """Write staging[:size] at position (whole blocks), going on after a short write."""
        assert self._staging is not None
        with memoryview(self._staging) as view:
            done = 0
            while done < size:
                done += os.pwrite(self._fd, view[done:size], position + done)
