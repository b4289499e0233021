"""Reading flushed entries: index lookup, one read of a run of entries, read-ahead into the read cache.

Runs on the reader threads. Entries of a ledger are flushed in entry order,
so the requested entry and the ones after it usually sit back to back in one
entry log: they are read with one pread, checked against their checksums,
and the following ones are kept in the read cache for the next reads.
"""

from __future__ import annotations

from pulsar_bookie import errors
from pulsar_bookie.storage import entry_log, index, read_cache, records

#: How often a read retries when garbage collection moved its entry meanwhile.
_LOCATE_ATTEMPTS = 5
#: Most bytes one read-ahead takes from an entry log.
READ_AHEAD_MAX_BYTES = 4 * 1024 * 1024


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

    def read(self, ledger_id: int, entry_id: int) -> tuple[int, bytes] | None:
        """(lac, payload) of the entry, or None when the index does not know it."""
        for _ in range(_LOCATE_ATTEMPTS):
            run = self._contiguous_run(ledger_id, entry_id)
            if not run:
                return None
            try:
                return self._read_run(ledger_id, run)
            except entry_log.LogGoneError:
                continue  # compacted away between lookup and read: look it up again
        raise errors.BookieError(f"entry {ledger_id}:{entry_id} keeps moving; giving up")

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
            stored_ledger, stored_entry, lac, payload = records.decode_entry_body(body)
            if (stored_ledger, stored_entry) != (ledger_id, entry):
                raise errors.BookieError(f"index points {ledger_id}:{entry} at another entry")
            if result is None:
                result = (lac, payload)
            else:
                self.cache.put(ledger_id, entry, lac, payload)
        assert result is not None
        return result
