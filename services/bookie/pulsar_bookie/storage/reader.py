"""Reading flushed entries: index lookup, one read of a run of entries, read-ahead into the read cache.

Runs on the reader threads. Entries of a ledger are flushed in entry order,
so the requested entry and the ones after it usually sit back to back in one
entry log: they are read with one pread, checked against their checksums,
and the following ones are kept in the read cache for the next reads.

Clients read ranges with many requests at once (a broker catching a cursor
up, a Spark executor): those that arrive while a run covering their entry is
being read wait for it and take their entry from the read cache, instead of
each reading (and checksumming) its own overlapping run.
"""

from __future__ import annotations

import dataclasses
import threading

from pulsar_bookie import errors
from pulsar_bookie.storage import entry_log, index, read_cache, records

#: How often a read retries when garbage collection moved its entry meanwhile.
_LOCATE_ATTEMPTS = 5
#: Most bytes one read-ahead takes from an entry log.
READ_AHEAD_MAX_BYTES = 4 * 1024 * 1024
#: Longest a read waits for another thread's run before reading on its own.
RUN_WAIT_S = 5.0


@dataclasses.dataclass(eq=False)
class _RunInProgress:
    first_entry: int
    last_entry: int
    done: threading.Event = dataclasses.field(default_factory=threading.Event)


class EntryReader:
    def __init__(
        self,
        logger: entry_log.EntryLogger,
        ledger_index: index.LedgerIndex,
        cache: read_cache.ReadCache,
        read_ahead_entries: int,
    ) -> None:
        self.logger = logger
        self.index = ledger_index
        self.cache = cache
        self.read_ahead_entries = read_ahead_entries if cache.max_size_bytes > 0 else 1
        self.log_reads = 0
        self.shared_reads = 0
        self._lock = threading.Lock()
        self._in_progress: dict[int, list[_RunInProgress]] = {}

    def read(self, ledger_id: int, entry_id: int) -> tuple[int, bytes] | None:
        """(lac, payload) of the entry, or None when the index does not know it."""
        # A run read while this request queued for a reader thread may have brought it.
        cached = self.cache.peek(ledger_id, entry_id)
        if cached is not None:
            with self._lock:
                self.shared_reads += 1
            return cached
        progress, covering = self._claim(ledger_id, entry_id)
        if covering is not None:
            if covering.done.wait(RUN_WAIT_S):
                found = self.cache.peek(ledger_id, entry_id)
                if found is not None:
                    with self._lock:
                        self.shared_reads += 1
                    return found
            # The run stopped short of this entry (or its reader is stuck): read it here.
            progress, _ = self._claim(ledger_id, entry_id, wait_for_others=False)
        try:
            for _ in range(_LOCATE_ATTEMPTS):
                run = self._contiguous_run(ledger_id, entry_id)
                if not run:
                    return None
                with self._lock:
                    progress.last_entry = run[-1][0]
                try:
                    return self._read_run(ledger_id, run)
                except entry_log.LogGoneError:
                    continue  # compacted away between lookup and read: look it up again
            raise errors.BookieError(f"entry {ledger_id}:{entry_id} keeps moving; giving up")
        finally:
            self._end(ledger_id, progress)

    def _claim(self, ledger_id: int, entry_id: int, wait_for_others: bool = True
               ) -> tuple[_RunInProgress, _RunInProgress | None]:
        """Either a run being read that will bring this entry into the read cache, or
        a new run claimed (atomically with the look) for this read to do."""
        with self._lock:
            runs = self._in_progress.setdefault(ledger_id, [])
            if wait_for_others:
                for run in runs:
                    if run.first_entry < entry_id <= run.last_entry:
                        return run, run
            # As far as a run from this entry may reach until the index says where it ends.
            claimed = _RunInProgress(entry_id, entry_id + self.read_ahead_entries - 1)
            runs.append(claimed)
            return claimed, None

    def _end(self, ledger_id: int, progress: _RunInProgress) -> None:
        with self._lock:
            runs = self._in_progress.get(ledger_id)
            if runs is not None and progress in runs:
                runs.remove(progress)
                if not runs:
                    del self._in_progress[ledger_id]
        progress.done.set()

    def _contiguous_run(
        self, ledger_id: int, entry_id: int
    ) -> list[tuple[int, entry_log.Location]]:
        """The entry's location and those of following entries stored right after it."""
        found = self.index.locations_from(ledger_id, entry_id, self.read_ahead_entries)
        if not found or found[0][0] != entry_id:
            return []
        run = [found[0]]
        total = found[0][1].size
        for entry, location in found[1:]:
            last = run[-1][1]
            if (
                location.log_id != last.log_id
                or location.offset != last.offset + last.size
                or total + location.size > READ_AHEAD_MAX_BYTES
            ):
                break
            run.append((entry, location))
            total += location.size
        return run

    def _read_run(
        self, ledger_id: int, run: list[tuple[int, entry_log.Location]]
    ) -> tuple[int, bytes]:
        first = run[0][1]
        last = run[-1][1]
        data = self.logger.read(first.log_id, first.offset, last.offset + last.size - first.offset)
        with self._lock:
            self.log_reads += 1
        result: tuple[int, bytes] | None = None
        for entry, location in run:
            body = records.check_record(data, location.offset - first.offset)
            if body is None:
                if result is None:
                    raise errors.BookieError(
                        f"entry {ledger_id}:{entry} in entry log {location.log_id:x} fails its checksum"
                    )
                break
            decoded = records.decode_stored_entry(body, entry_log.is_journal_log(location.log_id))
            if decoded is None:
                raise errors.BookieError(f"index points {ledger_id}:{entry} at another record")
            stored_ledger, stored_entry, lac, payload = decoded
            if (stored_ledger, stored_entry) != (ledger_id, entry):
                raise errors.BookieError(f"index points {ledger_id}:{entry} at another entry")
            if result is None:
                result = (lac, payload)
            else:
                self.cache.put(ledger_id, entry, lac, payload)
        assert result is not None
        return result
