"""Which ledgers of a managed ledger may be deleted: a pure decision.

A ledger may go once every durable cursor has acknowledged all of it (it lies
wholly at or before the slowest mark-delete position) and retention no
longer asks to keep it. As in Pulsar, a consumed ledger is kept while it is
younger than the retention time and the data kept stays within the retention
size; it goes as soon as either limit is exceeded (-1, shown here as None,
never is). The current ledger is never deleted. Truncating a topic decides
with KEEP_NOTHING: every consumed ledger goes, whatever the retention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pulsar_broker.managed_ledger import api


@dataclass(frozen=True)
class Retention:
    #: None keeps consumed ledgers forever (as far as time goes).
    time_ms: int | None
    #: None sets no size limit.
    size_bytes: int | None


#: What truncate keeps of the consumed ledgers: nothing (each is as old and as large as
#: can be, as far as retention goes).
KEEP_NOTHING = Retention(time_ms=0, size_bytes=0)


def fully_consumed(info: api.LedgerInfo, slowest_mark_delete: api.Position) -> bool:
    if info.ledger_id < slowest_mark_delete.ledger_id:
        return True
    return (
        info.ledger_id == slowest_mark_delete.ledger_id
        and slowest_mark_delete.entry_id >= info.entries - 1
    )


def ledgers_to_delete(
    ledgers: Sequence[api.LedgerInfo],
    current_ledger_id: int | None,
    slowest_mark_delete: api.Position | None,
    retention: Retention,
    now_ms: int,
) -> list[api.LedgerInfo]:
    """The oldest ledgers that may go, in order; slowest_mark_delete None means no cursors."""
    total_size = sum(info.size for info in ledgers)
    size_to_delete = 0
    doomed: list[api.LedgerInfo] = []
    for info in ledgers:
        if info.ledger_id == current_ledger_id:
            break
        if slowest_mark_delete is not None and not fully_consumed(info, slowest_mark_delete):
            break
        expired = retention.time_ms is not None and now_ms - info.timestamp_ms >= retention.time_ms
        over_size = (
            retention.size_bytes is not None
            and total_size - size_to_delete > retention.size_bytes
        )
        if not (expired or over_size):
            break
        doomed.append(info)
        size_to_delete += info.size
    return doomed
