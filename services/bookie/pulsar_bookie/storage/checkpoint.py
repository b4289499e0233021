"""Moving a swapped-out write cache half to entry logs and the index (runs on the flush thread).

Order matters for crash safety: entries are appended and fsync'd to entry
logs first, and only then are their locations, the ledgers' info, the entry
log usage and the new log marks written to the index in one synced batch. A
crash before the index write leaves unreferenced bytes in an entry log (which
garbage collection later removes) and the old marks, so the journal replays
everything again.
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
) -> int:
    """Persist one half; returns the number of entries written."""
    entries = half.sorted_records()
    batch = index.FlushBatch(ledgers=dict(ledgers), marks=dict(marks))
    if entries:
        locations, added = logger.append(entries)
        logger.sync()
        batch.locations = [(e[0], e[1], loc) for e, loc in zip(entries, locations)]
        merge_usage(usage, added)
        batch.log_usage = {log_id: dict(usage[log_id]) for log_id in added}
    ledger_index.commit(batch)
    return len(entries)
