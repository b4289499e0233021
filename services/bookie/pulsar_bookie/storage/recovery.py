"""Replaying the journals after a restart, from each journal's last log mark.

Runs before the engine serves anything, on a worker thread. Records are
applied in journal order to the ledger table and the write cache; when the
write cache fills up it is flushed without moving the marks (replaying the
same records again later is harmless: adds are idempotent). The engine then
checkpoints once at the start of fresh journal files.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from pulsar_bookie.storage import index, records, write_cache

log = logging.getLogger(__name__)

RecordType = records.RecordType


class Replayer:
    """Applies journal records to the engine's state (the engine owns the objects)."""

    def __init__(
        self,
        ledgers: dict[int, index.LedgerInfo],
        cache: write_cache.WriteCache,
        flush: Callable[[set[int]], None],
        delete_ledger: Callable[[int], None],
    ) -> None:
        self.ledgers = ledgers
        self.cache = cache
        self.flush = flush
        self.delete_ledger = delete_ledger
        self.touched: set[int] = set()
        self.applied = 0

    def _info(self, ledger_id: int) -> index.LedgerInfo:
        info = self.ledgers.get(ledger_id)
        if info is None:
            # The master key record is older than the last mark only if the
            # ledger info was checkpointed; otherwise it came first in this journal.
            info = self.ledgers[ledger_id] = index.LedgerInfo(master_key=b"")
        self.touched.add(ledger_id)
        return info

    def apply(self, record: records.JournalRecord) -> None:
        self.applied += 1
        if record.type == RecordType.ADD_ENTRY:
            info = self._info(record.ledger_id)
            if not self.cache.has_room(len(record.payload)):
                self.flush(self.touched)
            self.cache.put(
                record.ledger_id, record.entry_id, record.last_add_confirmed, record.payload
            )
            info.last_add_confirmed = max(info.last_add_confirmed, record.last_add_confirmed)
            info.last_entry_id = max(info.last_entry_id, record.entry_id)
        elif record.type == RecordType.MASTER_KEY:
            self._info(record.ledger_id).master_key = record.master_key
        elif record.type == RecordType.FENCE:
            self._info(record.ledger_id).fenced = True
        elif record.type == RecordType.DELETE_LEDGER:
            self.ledgers.pop(record.ledger_id, None)
            self.touched.discard(record.ledger_id)
            self.cache.drop_ledger(record.ledger_id)
            self.delete_ledger(record.ledger_id)

    def apply_all(self, stream: Iterable[records.JournalRecord]) -> None:
        for record in stream:
            self.apply(record)
