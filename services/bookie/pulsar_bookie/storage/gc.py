"""Garbage collection and compaction of entry logs (runs on the flush thread, under the index lock).

An entry log whose ledgers are all deleted is removed. An entry log whose
live ratio (bytes of existing ledgers / all bytes) is below the compaction
threshold is compacted: its live entries (those the index still points at)
are appended to the current entry log and synced, the index is repointed in
one synced batch, and only then is the old log deleted. Entry log files that
the index knows nothing of (a crash before their first flush completed) are
removed too.

Journal files that hold entries the index points at (journalResidentEntryMinBytes)
are collected the same way, from their usage: deleted once their entries'
ledgers are all deleted, compacted (the live entries copied to an entry log)
below the threshold. Only files wholly before their journal's checkpoint mark
are candidates; later ones may still be replayed.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from pulsar_bookie.storage import checkpoint, entry_log, index, records

log = logging.getLogger(__name__)

#: Live entries held in memory at once while compacting a log.
COMPACTION_CHUNK_BYTES = 8 * 1024 * 1024


@dataclasses.dataclass(frozen=True)
class GcResult:
    deleted_logs: tuple[int, ...] = ()
    compacted_logs: tuple[int, ...] = ()
    reclaimed_bytes: int = 0


def live_ratio(per_ledger: dict[int, int], existing: AbstractSet[int]) -> float:
    total = sum(per_ledger.values())
    if total == 0:
        return 0.0
    return sum(size for ledger, size in per_ledger.items() if ledger in existing) / total


def collect(
    logger: entry_log.EntryLogger,
    ledger_index: index.LedgerIndex,
    usage: dict[int, dict[int, int]],
    existing: AbstractSet[int],
    compaction_threshold: float,
    journal_floors: Mapping[int, int] | None = None,
) -> GcResult:
    """`journal_floors`: per journal, the file id of its checkpoint mark (journal files from
    that one on are never touched)."""
    deleted: list[int] = []
    compacted: list[int] = []
    reclaimed = 0
    current = logger.current_log_id
    floors = journal_floors or {}
    candidates = [log_id for log_id in logger.log_ids() if log_id < current]
    for log_id in sorted(usage):
        if entry_log.is_journal_log(log_id):
            number, file_id = entry_log.split_journal_log_id(log_id)
            if file_id < floors.get(number, 0):
                candidates.append(log_id)
    for log_id in candidates:
        per_ledger = usage.get(log_id)
        ratio = 0.0 if per_ledger is None else live_ratio(per_ledger, existing)
        if ratio > 0.0 and ratio >= compaction_threshold:
            continue
        size = logger.path(log_id).stat().st_size
        if ratio > 0.0:
            _compact(logger, ledger_index, usage, log_id, existing)
            compacted.append(log_id)
        else:
            ledger_index.commit(index.FlushBatch(log_usage={log_id: None}))
            deleted.append(log_id)
        usage.pop(log_id, None)
        logger.delete(log_id)
        reclaimed += size
    return GcResult(tuple(deleted), tuple(compacted), reclaimed)


def _compact(
    logger: entry_log.EntryLogger,
    ledger_index: index.LedgerIndex,
    usage: dict[int, dict[int, int]],
    log_id: int,
    existing: AbstractSet[int],
) -> None:
    """Copy the log's live entries to the current log in chunks, then repoint the index at once."""
    batch = index.FlushBatch()
    touched_logs: set[int] = set()
    chunk: list[tuple[int, int, int, bytes]] = []
    chunk_bytes = 0

    def move_chunk() -> None:
        locations, added = logger.append(chunk)
        batch.locations.extend((e[0], e[1], loc) for e, loc in zip(chunk, locations))
        checkpoint.merge_usage(usage, added)
        touched_logs.update(added)

    in_journal = entry_log.is_journal_log(log_id)
    for location, body in logger.scan(log_id):
        decoded = records.decode_stored_entry(body, in_journal)
        if decoded is None:
            continue
        ledger, entry, lac, payload = decoded
        if ledger in existing and ledger_index.get_location(ledger, entry) == location:
            chunk.append((ledger, entry, lac, payload))
            chunk_bytes += len(payload)
            if chunk_bytes >= COMPACTION_CHUNK_BYTES:
                move_chunk()
                chunk, chunk_bytes = [], 0
    if chunk:
        move_chunk()
    if batch.locations:
        logger.sync()
    batch.log_usage = {lid: dict(usage[lid]) for lid in touched_logs}
    batch.log_usage[log_id] = None
    ledger_index.commit(batch)
    log.info("compacted entry log %x: %d live entries moved", log_id, len(batch.locations))
