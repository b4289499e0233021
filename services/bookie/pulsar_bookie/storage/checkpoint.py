"""Moving a swapped-out write cache half to entry logs and the index (runs on the flush thread).

Order matters for crash safety: entries are appended and fsync'd to entry
logs first, and only then are their locations, the ledgers' info, the entry
log usage and the new log marks written to the index in one synced batch. A
crash before the index write leaves unreferenced bytes in an entry log (which
garbage collection later removes) and the old marks, so the journal replays
everything again. Entries kept in the journal (journalResidentEntryMinBytes)
are already durable there: their locations simply name the journal record.
"""

from __future__ import annotations

from collections.abc import Mapping

from pulsar_bookie.storage import entry_log, index, journal, write_cache


def merge_usage(usage: dict[int, dict[int, int]], added: entry_log.LedgerUsage) -> None:
    for log_id, per_ledger in added.items():
        target = usage.setdefault(log_id, {})
        for ledger, size in per_ledger.items():
            target[ledger] = target.get(ledger, 0) + size


def flush_half(
    logger: entry_log.EntryLogger,
    ledger_index: index.LedgerIndex,
    usage: dict[int, dict[int, int]],
    half: write_cache.WriteCacheHalf,
    ledgers: Mapping[int, index.LedgerInfo],
    marks: Mapping[int, journal.LogMark],
    resident: Mapping[tuple[int, int], entry_log.Location] | None = None,
) -> int:
    """Persist one half; returns the number of entries written.

    Entries with a place in `resident` (their journal record, written and synced before the
    new marks) are not copied: the index points at the journal record.
    """
    entries = half.sorted_records()
    batch = index.FlushBatch(ledgers=dict(ledgers), marks=dict(marks))
    if entries:
        to_log = entries
        in_journal: entry_log.LedgerUsage = {}
        if resident:
            to_log = []
            for entry in entries:
                location = resident.get((entry[0], entry[1]))
                if location is None:
                    to_log.append(entry)
                    continue
                batch.locations.append((entry[0], entry[1], location))
                per_ledger = in_journal.setdefault(location.log_id, {})
                per_ledger[entry[0]] = per_ledger.get(entry[0], 0) + location.size
        added: entry_log.LedgerUsage = {}
        if to_log:
            locations, added = logger.append(to_log)
            logger.sync()
            batch.locations += [(e[0], e[1], loc) for e, loc in zip(to_log, locations)]
        merge_usage(usage, added)
        merge_usage(usage, in_journal)
        batch.log_usage = {log_id: dict(usage[log_id]) for log_id in (*added, *in_journal)}
    ledger_index.commit(batch)
    return len(entries)
