"""The bookie's storage engine: journal + write cache + entry logs + RocksDB index, as in DbLedgerStorage.

`LedgerStorageEngine` implements `storage.api.LedgerStorage`. It runs on one
asyncio event loop; many callers (the in-process ledger client, or the
bookie server's connections) may call it concurrently from that loop. Disk
work happens off the loop: one writer thread per journal (group commit; with
journalSyncData off the loop writes the journal itself, see journal.py), one
flush thread (write cache -> entry logs -> index, garbage collection) and a
small pool of reader threads.

An add is acknowledged once its journal record is fsync'd (journalSyncData).
The write cache makes it readable at once; a background flush, when half the
cache is full or every flushInterval ms, moves it to entry logs and the index
and then records a checkpoint (the journals' last log marks) so older journal
files can be deleted. After a crash, `start` replays the journals from the
checkpoint.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import enum
import logging
import os
import pathlib
import time
import typing
from collections.abc import Callable

from pulsar_bookie import config as bookie_config
from pulsar_bookie import errors, types
from pulsar_bookie.storage import (
    api,
    checkpoint,
    cookie,
    entry_log,
    gc,
    index,
    journal,
    read_cache,
    records,
    recovery,
    write_cache,
)
from pulsar_bookie.storage import reader as entry_reader

log = logging.getLogger(__name__)


class _State(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSING = "closing"
    CLOSED = "closed"


@dataclasses.dataclass(frozen=True)
class EngineStats:
    """A snapshot of the engine's counters (for tests, benchmarks and metrics)."""

    adds: int
    journal_records: int
    journal_batches: int
    journal_fsyncs: int
    journal_fsync_seconds: float
    journal_bytes: int
    flushes: int
    flushed_entries: int
    write_cache_bytes: int
    read_cache_bytes: int
    read_cache_hits: int
    read_cache_misses: int
    entry_log_reads: int
    journal_queue_depth: int
    gc_runs: int
    #: Journal records applied by the replay at start (0 after a clean close).
    replayed_records: int


#: journalResidentEntryMinBytes when it is -1 and the journals share the ledgers' filesystem.
RESIDENT_ENTRY_MIN_BYTES_SHARED_DISK = 32 * 1024


def _filesystem(path: pathlib.Path) -> int:
    """The device of the filesystem that holds (or will hold) the path."""
    for candidate in (path, *path.absolute().parents):
        with contextlib.suppress(FileNotFoundError):
            return os.stat(candidate).st_dev
    return -1


def resident_entry_min_bytes(conf: bookie_config.BookieConfig) -> int:
    """journalResidentEntryMinBytes in effect (-1 decided by where the directories are)."""
    if conf.journalResidentEntryMinBytes >= 0:
        return conf.journalResidentEntryMinBytes
    ledger_filesystems = {_filesystem(pathlib.Path(d)) for d in conf.ledgerDirectories}
    journal_filesystems = {_filesystem(pathlib.Path(d)) for d in conf.journal_dirs}
    if journal_filesystems <= ledger_filesystems:
        return RESIDENT_ENTRY_MIN_BYTES_SHARED_DISK
    return 0


def journal_settings(conf: bookie_config.BookieConfig) -> journal.JournalSettings:
    return journal.JournalSettings(
        sync_data=conf.journalSyncData,
        max_group_wait_s=conf.journalMaxGroupWaitMSec / 1000.0,
        max_batch_bytes=conf.journalBufferedWritesThreshold,
        max_batch_records=conf.journalBufferedEntriesThreshold,
        flush_when_queue_empty=conf.journalFlushWhenQueueEmpty,
        adaptive_group_wait=conf.journalAdaptiveGroupWrites,
        queue_size=conf.journalQueueSize,
        max_file_size=conf.journalMaxSizeMB * bookie_config.MB,
        resident_min_bytes=resident_entry_min_bytes(conf),
        direct_writes=conf.journalDirectWrites,
    )


class LedgerStorageEngine(api.LedgerStorage):
    """One bookie's local storage. Create, `await start()`, use, `await close()`."""

    def __init__(
        self,
        conf: bookie_config.BookieConfig,
        *,
        expected_instance_id: str | None = None,
    ) -> None:
        conf.validate()
        self.conf = conf
        self._expected_instance_id = expected_instance_id
        self.cookie: cookie.Cookie | None = None
        self._state = _State.NEW
        self._journal_dirs = [pathlib.Path(d) for d in conf.journal_dirs]
        self._ledger_dirs = [pathlib.Path(d) for d in conf.ledgerDirectories]
        self._journals = [
            journal.Journal(d / "current", journal_settings(conf)) for d in self._journal_dirs
        ]
        self._ledgers: dict[int, index.LedgerInfo] = {}
        #: Ledgers whose master key record failed in the journal: journalled again on next use.
        self._keys_not_journalled: set[int] = set()
        self._dirty: set[int] = set()
        self._usage: dict[int, dict[int, int]] = {}
        self._write_cache = write_cache.WriteCache(conf.write_cache_max_bytes)
        self._read_cache = read_cache.ReadCache(conf.read_cache_max_bytes)
        self._logger = entry_log.EntryLogger(
            [d / "current" for d in self._ledger_dirs],
            conf.entryLogSizeLimit,
            [j.directory for j in self._journals],
        )
        #: Each journal's last checkpointed mark: files from its file on may still be replayed.
        self._marks: dict[int, journal.LogMark] = {}
        self._index: index.LedgerIndex | None = None
        self._reader: entry_reader.EntryReader | None = None
        self._flush_thread = concurrent.futures.ThreadPoolExecutor(
            1, thread_name_prefix="bookie-flush"
        )
        self._read_threads = concurrent.futures.ThreadPoolExecutor(
            conf.numReadWorkerThreads, thread_name_prefix="bookie-read"
        )
        self._pending_log_reads = 0
        self._pending_log_reads_max = (
            conf.numReadWorkerThreads * conf.maxPendingReadRequestsPerThread
        )
        self._index_lock = asyncio.Lock()
        self._flush_wanted = asyncio.Event()
        self._cache_room = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._adds = 0
        self._flushes = 0
        self._flushed_entries = 0
        self._gc_runs = 0
        self._replayed_records = 0
        self._last_minor = self._last_major = time.monotonic()

    # ----- life cycle -----

    async def start(self) -> None:
        """Check cookies, open the index, replay the journals, start background work."""
        if self._state is not _State.NEW:
            raise errors.BookieError("engine already started")
        loop = asyncio.get_running_loop()
        self._state = _State.CLOSING  # until started: refuse calls
        try:
            await loop.run_in_executor(self._flush_thread, self._open_and_replay)
            for j in self._journals:
                j.start(loop)
            # The replayed records go to entry logs; the marks move to the start of the new files.
            await self._run_flush()
        except BaseException:
            await self._release_resources()
            raise
        self._state = _State.RUNNING
        self._tasks = [
            asyncio.create_task(self._flush_loop(), name="bookie-flush"),
            asyncio.create_task(self._gc_loop(), name="bookie-gc"),
        ]

    def _open_and_replay(self) -> None:
        self.cookie = cookie.check_or_create(
            self._journal_dirs, self._ledger_dirs, self.conf.bookieId, self._expected_instance_id
        )
        ledger_index = self._index = index.LedgerIndex(self._ledger_dirs[0] / "current" / "index")
        self._reader = entry_reader.EntryReader(
            self._logger,
            ledger_index,
            self._read_cache,
            self.conf.dbStorage_readAheadCacheBatchSize,
        )
        self._ledgers = ledger_index.load_ledgers()
        self._usage = ledger_index.load_log_usage()
        marks = ledger_index.load_marks()
        self._marks = dict(marks)
        self._logger.start()
        replayer = recovery.Replayer(
            self._ledgers, self._write_cache, self._replay_flush, ledger_index.delete_ledger
        )
        for number, j in enumerate(self._journals):
            replayer.apply_all(j.replay(marks.get(number, journal.LogMark(0, 0))))
        self._dirty = replayer.touched
        self._replayed_records = replayer.applied
        log.info("replayed %d journal records", replayer.applied)

    def _replay_flush(self, touched: set[int]) -> None:
        assert self._index is not None
        half = self._write_cache.swap()
        snapshot = {
            ledger: self._ledgers[ledger].copy() for ledger in touched if ledger in self._ledgers
        }
        checkpoint.flush_half(self._logger, self._index, self._usage, half, snapshot, {})
        self._write_cache.flushed()

    async def close(self) -> None:
        """Stop taking requests, checkpoint, and stop every thread."""
        if self._state in (_State.CLOSING, _State.CLOSED):
            return
        was_running = self._state is _State.RUNNING
        self._state = _State.CLOSING
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        try:
            if was_running and self.journal_failure is None:
                await self._run_flush()
            elif was_running:
                # No log mark to take: the journal holds every acknowledged add, and the
                # next start replays it.
                log.warning("closing without a checkpoint: a journal failed")
        finally:
            await self._release_resources()

    async def _release_resources(self) -> None:
        for j in self._journals:
            await j.close()
        await asyncio.to_thread(self._read_threads.shutdown, True)
        await asyncio.to_thread(self._flush_thread.shutdown, True)
        self._logger.close()
        if self._index is not None:
            self._index.close()
            self._index = None
        self._state = _State.CLOSED
        self._cache_room.set()

    def _check_running(self) -> None:
        if self._state is not _State.RUNNING:
            raise errors.StorageClosedError(f"storage is {self._state.value}")

    def _journal_for(self, ledger_id: int) -> journal.Journal:
        return self._journals[ledger_id % len(self._journals)]

    # ----- journal failures -----

    def on_journal_failure(self, callback: Callable[[BaseException], None]) -> None:
        """Call back (on the event loop) whenever a journal write or sync fails."""
        for j in self._journals:
            j.on_failure = callback

    @property
    def journal_failure(self) -> BaseException | None:
        """Why a journal refuses appends, or None when every journal takes them."""
        return next((j.failure for j in self._journals if j.failure is not None), None)

    @property
    def journal_recoverable(self) -> bool:
        """False once a journal failed with an error other than a lack of space."""
        return all(j.recoverable for j in self._journals)

    async def recover_journals(self) -> bool:
        """Failed journals go on in fresh files (call once their disks have room)."""
        results = [await j.recover() for j in self._journals]
        return all(results)

    # ----- writes -----

    def _ledger_for_write(self, ledger_id: int, master_key: bytes) -> index.LedgerInfo:
        """The ledger's info, created (with a journalled master key) on first sight."""
        info = self._ledgers.get(ledger_id)
        if info is None:
            self._journal_master_key(ledger_id, master_key)
            info = self._ledgers[ledger_id] = index.LedgerInfo(master_key=master_key)
            self._dirty.add(ledger_id)
        elif info.master_key != master_key:
            raise errors.UnauthorizedAccessError(f"wrong master key for ledger {ledger_id}")
        elif ledger_id in self._keys_not_journalled:
            self._journal_master_key(ledger_id, master_key)
        return info

    def _journal_master_key(self, ledger_id: int, master_key: bytes) -> None:
        """Queue the master key record; if its batch fails, the next write queues it again
        (replay without it would give the ledger an empty key)."""
        future = self._journal_for(ledger_id).append_nowait(
            records.master_key_record(ledger_id, master_key)
        )
        self._keys_not_journalled.discard(ledger_id)

        def check(done: asyncio.Future[object]) -> None:
            if not done.cancelled() and done.exception() is not None:
                self._keys_not_journalled.add(ledger_id)

        future.add_done_callback(check)

    async def add_entry(
        self,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        last_add_confirmed: types.EntryId,
        payload: bytes,
        master_key: bytes,
        *,
        recovery: bool = False,
    ) -> None:
        if self._state is not _State.RUNNING:
            self._check_running()
        if not self._write_cache.has_room(len(payload)):
            await self._wait_for_cache_room(len(payload))
        record = self._put(ledger_id, entry_id, last_add_confirmed, payload, master_key, recovery)
        await self._journal_for(ledger_id).append(record)

    def add_entry_future(
        self,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        last_add_confirmed: types.EntryId,
        payload: bytes,
        master_key: bytes,
    ) -> asyncio.Future[object]:
        """add_entry without a coroutine for the in-process client: the journal's future
        (done once the record is durable). Only when the add has to wait for write cache
        or journal queue room does it fall back to add_entry (in a task). Refusals raise."""
        if self._state is not _State.RUNNING:
            self._check_running()
        target = self._journal_for(ledger_id)
        if not self._write_cache.has_room(len(payload)) or target.queue_full:
            return asyncio.ensure_future(
                self.add_entry(ledger_id, entry_id, last_add_confirmed, payload, master_key)
            )
        record = self._put(ledger_id, entry_id, last_add_confirmed, payload, master_key, False)
        return target.append_nowait(record)

    def _put(
        self,
        ledger_id: int,
        entry_id: int,
        last_add_confirmed: int,
        payload: bytes,
        master_key: bytes,
        recovery: bool,
    ) -> records.Parts:
        """Take the entry into the write cache and the ledger's info; its journal record."""
        info = self._ledger_for_write(ledger_id, master_key)
        if info.fenced and not recovery:
            raise errors.LedgerFencedError(f"ledger {ledger_id} is fenced")
        cache = self._write_cache
        cache.put(ledger_id, entry_id, last_add_confirmed, payload)
        info.last_add_confirmed = max(info.last_add_confirmed, last_add_confirmed)
        info.last_entry_id = max(info.last_entry_id, entry_id)
        self._dirty.add(ledger_id)
        self._adds += 1
        if cache.active_full:
            self._flush_wanted.set()
        return records.add_entry_parts(ledger_id, entry_id, last_add_confirmed, payload)

    async def _wait_for_cache_room(self, size: int) -> None:
        """Backpressure: wait (at most dbStorage_maxThrottleTimeMs) for a flush to make room."""
        deadline = time.monotonic() + self.conf.dbStorage_maxThrottleTimeMs / 1000.0
        while not self._write_cache.has_room(size):
            self._check_running()
            self._flush_wanted.set()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.TooManyRequestsError("write cache is full and the flush is behind")
            self._cache_room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._cache_room.wait(), remaining)

    async def fence_ledger(self, ledger_id: types.LedgerId, master_key: bytes) -> types.EntryId:
        self._check_running()
        info = self._ledger_for_write(ledger_id, master_key)
        if not info.fenced:
            info.fenced = True
            self._dirty.add(ledger_id)
        # Wait for the record even if already fenced: an earlier fence may not be durable yet.
        await self._journal_for(ledger_id).append(records.fence_record(ledger_id))
        return types.EntryId(info.last_add_confirmed)

    async def delete_ledger(self, ledger_id: types.LedgerId) -> None:
        self._check_running()
        if ledger_id not in self._ledgers:
            return
        async with self._index_lock:
            if self._ledgers.pop(ledger_id, None) is None:
                return
            self._dirty.discard(ledger_id)
            self._keys_not_journalled.discard(ledger_id)
            self._write_cache.drop_ledger(ledger_id)
            self._read_cache.drop_ledger(ledger_id)
            await self._journal_for(ledger_id).append(records.delete_ledger_record(ledger_id))
            assert self._index is not None
            await asyncio.get_running_loop().run_in_executor(
                self._flush_thread, self._index.delete_ledger, ledger_id
            )

    # ----- reads -----

    def _info(self, ledger_id: int) -> index.LedgerInfo:
        self._check_running()
        info = self._ledgers.get(ledger_id)
        if info is None:
            raise errors.NoSuchLedgerError(f"ledger {ledger_id} is not stored here")
        return info

    def read_entry_cached(
        self, ledger_id: types.LedgerId, entry_id: types.EntryId
    ) -> api.StoredEntry | None:
        """The entry if the write or read cache holds it (no await), else None; raises
        NoSuchLedgerError as read_entry does. The bookie server answers these at once."""
        self._info(ledger_id)
        found = self._write_cache.get(ledger_id, entry_id) or self._read_cache.get(
            ledger_id, entry_id
        )
        if found is None:
            return None
        return api.StoredEntry(ledger_id, entry_id, types.EntryId(found[0]), found[1])

    async def read_entry(
        self, ledger_id: types.LedgerId, entry_id: types.EntryId
    ) -> api.StoredEntry:
        cached = self.read_entry_cached(ledger_id, entry_id)
        if cached is not None:
            return cached
        found = await self._read_from_entry_logs(ledger_id, entry_id)
        if found is None:
            raise errors.NoSuchEntryError(f"entry {ledger_id}:{entry_id} is not stored here")
        return api.StoredEntry(ledger_id, entry_id, types.EntryId(found[0]), found[1])

    async def _read_from_entry_logs(
        self, ledger_id: int, entry_id: int
    ) -> tuple[int, bytes] | None:
        if self._pending_log_reads >= self._pending_log_reads_max:
            raise errors.TooManyRequestsError("too many reads waiting for the entry logs")
        assert self._reader is not None
        self._pending_log_reads += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(
                self._read_threads, self._reader.read, ledger_id, entry_id
            )
        finally:
            self._pending_log_reads -= 1

    async def read_last_add_confirmed(self, ledger_id: types.LedgerId) -> types.EntryId:
        return types.EntryId(self._info(ledger_id).last_add_confirmed)

    async def last_entry_id(self, ledger_id: types.LedgerId) -> types.EntryId:
        return types.EntryId(self._info(ledger_id).last_entry_id)

    async def is_fenced(self, ledger_id: types.LedgerId) -> bool:
        return self._info(ledger_id).fenced

    async def list_ledgers(self) -> list[types.LedgerId]:
        self._check_running()
        return [types.LedgerId(ledger) for ledger in sorted(self._ledgers)]

    # ----- flush (checkpoint) -----

    async def flush(self) -> None:
        """Move the write cache to entry logs and checkpoint now."""
        self._check_running()
        await self._run_flush()

    async def _flush_loop(self) -> None:
        interval = self.conf.flushInterval / 1000.0
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._flush_wanted.wait(), interval)
            self._flush_wanted.clear()
            if self.journal_failure is not None:
                continue  # no log mark to take until the journal writes again
            try:
                # Shielded: close() cancels this loop, but never a flush halfway.
                await asyncio.shield(self._run_flush())
            except Exception:
                log.exception("flush failed; retrying after the flush interval")

    async def _run_flush(self) -> None:
        async with self._index_lock:
            mark_futures = [j.request_mark() for j in self._journals]
            half = self._write_cache.swap()
            snapshot = {
                ledger: self._ledgers[ledger].copy()
                for ledger in self._dirty
                if ledger in self._ledgers
            }
            self._dirty = set()
            self._cache_room.set()
            try:
                marks = {
                    n: typing.cast(journal.LogMark, mark)
                    for n, mark in enumerate(await asyncio.gather(*mark_futures))
                }
                assert self._index is not None
                written = await asyncio.get_running_loop().run_in_executor(
                    self._flush_thread,
                    checkpoint.flush_half,
                    self._logger,
                    self._index,
                    self._usage,
                    half,
                    snapshot,
                    marks,
                    self._take_resident(marks),
                )
            except BaseException:
                self._undo_swap(half, snapshot)
                raise
            self._write_cache.flushed()
            self._flushes += 1
            self._flushed_entries += written
            self._cache_room.set()
            self._marks = marks
            for n, j in enumerate(self._journals):
                j.delete_files_before(marks[n].file_id, self._journal_files_in_use(n))

    def _take_resident(
        self, marks: dict[int, journal.LogMark]
    ) -> dict[tuple[int, int], entry_log.Location]:
        """Locations of the large entries each journal wrote before its new mark: the flush
        points the index at them instead of copying them (journalResidentEntryMinBytes)."""
        resident: dict[tuple[int, int], entry_log.Location] = {}
        for n, j in enumerate(self._journals):
            for key, (file_id, offset, size) in j.take_resident(marks[n]):
                if (
                    n < entry_log.JOURNALS_MAX
                    and file_id <= entry_log.JOURNAL_FILE_ID_MAX
                    and offset + size <= 0xFFFFFFFF
                ):
                    log_id = entry_log.journal_log_id(n, file_id)
                    resident[key] = entry_log.Location(log_id, offset, size)
        return resident

    def _journal_files_in_use(self, journal_number: int) -> frozenset[int]:
        """Files of this journal that hold entries the index points at."""
        places = (entry_log.split_journal_log_id(log_id)
                  for log_id in self._usage if entry_log.is_journal_log(log_id))
        return frozenset(file_id for number, file_id in places if number == journal_number)

    def _undo_swap(
        self, half: write_cache.WriteCacheHalf, snapshot: dict[int, index.LedgerInfo]
    ) -> None:
        """A failed flush puts its entries back so nothing is lost from the cache."""
        newer = self._write_cache.active
        self._write_cache.active = half
        self._write_cache.flushed()
        for ledger, entry, lac, payload in newer.items():
            half.put(ledger, entry, lac, payload)
        self._dirty |= set(snapshot)

    # ----- garbage collection -----

    async def garbage_collect(self, compaction_threshold: float | None = None) -> gc.GcResult:
        """Delete entry logs of deleted ledgers; compact logs whose live ratio is below the threshold.

        Without a threshold, the major or minor threshold applies when its interval is due.
        """
        self._check_running()
        if compaction_threshold is None:
            compaction_threshold = self._due_threshold()
        async with self._index_lock:
            existing = frozenset(self._ledgers)
            assert self._index is not None
            result = await asyncio.get_running_loop().run_in_executor(
                self._flush_thread,
                gc.collect,
                self._logger,
                self._index,
                self._usage,
                existing,
                compaction_threshold,
                {n: mark.file_id for n, mark in self._marks.items()},
            )
        self._gc_runs += 1
        return result

    def _due_threshold(self) -> float:
        now = time.monotonic()
        conf = self.conf
        if (
            conf.majorCompactionInterval > 0
            and now - self._last_major >= conf.majorCompactionInterval
        ):
            self._last_major = self._last_minor = now
            return conf.majorCompactionThreshold
        if (
            conf.minorCompactionInterval > 0
            and now - self._last_minor >= conf.minorCompactionInterval
        ):
            self._last_minor = now
            return conf.minorCompactionThreshold
        return 0.0

    async def _gc_loop(self) -> None:
        while True:
            await asyncio.sleep(self.conf.gcWaitTime / 1000.0)
            try:
                await asyncio.shield(self.garbage_collect())
            except Exception:
                log.exception("garbage collection failed")

    # ----- introspection -----

    @property
    def instance_id(self) -> str:
        assert self.cookie is not None
        return self.cookie.instance_id

    def stats(self) -> EngineStats:
        assert self._reader is not None or self._state is _State.NEW
        return EngineStats(
            adds=self._adds,
            journal_records=sum(j.stats.records for j in self._journals),
            journal_batches=sum(j.stats.batches for j in self._journals),
            journal_fsyncs=sum(j.stats.fsyncs for j in self._journals),
            journal_fsync_seconds=sum(j.stats.fsync_seconds for j in self._journals),
            journal_bytes=sum(j.stats.bytes for j in self._journals),
            flushes=self._flushes,
            flushed_entries=self._flushed_entries,
            write_cache_bytes=self._write_cache.size_bytes,
            read_cache_bytes=self._read_cache.size_bytes,
            read_cache_hits=self._read_cache.hits,
            read_cache_misses=self._read_cache.misses,
            journal_queue_depth=sum(j.queued for j in self._journals),
            entry_log_reads=self._reader.log_reads if self._reader else 0,
            gc_runs=self._gc_runs,
            replayed_records=self._replayed_records,
        )

    def entry_log_disk_bytes(self) -> int:
        """Bytes of all entry log files (to watch garbage collection reclaim space)."""
        return self._logger.disk_usage_bytes()
