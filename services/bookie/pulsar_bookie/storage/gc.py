"""Garbage collection and compaction of entry logs (runs on the flush thread, under the index lock).

An entry log whose ledgers are all deleted is removed. An entry log whose
live ratio (bytes of existing ledgers / all bytes) is below the compaction
threshold is compacted: its live entries (those the index still points at)
are appended to the current entry log and synced, the index is repointed in
one synced batch, and only then is the old log deleted. Entry log files that
the index knows nothing of (a crash before their first flush completed) are
removed too.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Set as AbstractSet

from pulsar_bookie.storage import checkpoint, entry_log, index, records

log = logging.getLogger(__name__)


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
) -> GcResult:
    deleted: list[int] = []
    compacted: list[int] = []
    reclaimed = 0
    current = logger.current_log_id
    for log_id in logger.log_ids():
        if log_id >= current:
            continue
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
    live: list[tuple[int, int, int, bytes]] = []
    for location, body in logger.scan(log_id):
        ledger, entry, lac, payload = records.decode_entry_body(body)
        if ledger in existing and ledger_index.get_location(ledger, entry) == location:
            live.append((ledger, entry, lac, payload))
    batch = index.FlushBatch()
    if live:
        locations, added = logger.append(live)
        logger.sync()
        batch.locations = [(e[0], e[1], loc) for e, loc in zip(live, locations)]
        checkpoint.merge_usage(usage, added)
        batch.log_usage = {lid: dict(usage[lid]) for lid in added}
    batch.log_usage[log_id] = None
    ledger_index.commit(batch)
    log.info("compacted entry log %x: %d live entries moved", log_id, len(live))
