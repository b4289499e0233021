"""The RocksDB index (through rocksdict): entry locations, ledger info, entry log usage, log marks.

Keys (big-endian ids so that one ledger's entries sort together and in order):

- `E | ledger | entry` -> location in an entry log (log id, offset, size)
- `L | ledger` -> ledger info (fenced, last add confirmed, last entry id, master key)
- `M | log id` -> bytes per ledger in that entry log (for garbage collection)
- `C | journal index` -> the last log mark of that journal (the checkpoint)

A flush records everything in one synced write batch, so a crash leaves
either the old checkpoint and locations or the new ones.
"""

from __future__ import annotations

import dataclasses
import pathlib
import struct
from collections.abc import Mapping

from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from pulsar_bookie.storage import entry_log, journal

_ENTRY_KEY = struct.Struct(">cqq")
_LEDGER_KEY = struct.Struct(">cq")
_LOG_KEY = struct.Struct(">cQ")
_MARK_KEY = struct.Struct(">cH")
_LEDGER_VALUE = struct.Struct("<Bqq")
_USAGE_ITEM = struct.Struct("<qQ")
_MARK_VALUE = struct.Struct("<QQ")


@dataclasses.dataclass
class LedgerInfo:
    """What a bookie knows of a ledger besides its entries (mutable, owned by the engine)."""

    master_key: bytes
    fenced: bool = False
    last_add_confirmed: int = -1
    last_entry_id: int = -1

    def pack(self) -> bytes:
        return (
            _LEDGER_VALUE.pack(self.fenced, self.last_add_confirmed, self.last_entry_id)
            + self.master_key
        )

    @classmethod
    def unpack(cls, data: bytes) -> LedgerInfo:
        fenced, lac, last = _LEDGER_VALUE.unpack_from(data)
        return cls(bytes(data[_LEDGER_VALUE.size :]), bool(fenced), lac, last)

    def copy(self) -> LedgerInfo:
        return dataclasses.replace(self)


def entry_key(ledger_id: int, entry_id: int) -> bytes:
    return _ENTRY_KEY.pack(b"E", ledger_id, entry_id)


def _pack_usage(usage: Mapping[int, int]) -> bytes:
    return b"".join(_USAGE_ITEM.pack(ledger, size) for ledger, size in sorted(usage.items()))


def _unpack_usage(data: bytes) -> dict[int, int]:
    return dict(_USAGE_ITEM.iter_unpack(data))


@dataclasses.dataclass
class FlushBatch:
    """What one flush (or compaction) writes to the index in one synced batch."""

    locations: list[tuple[int, int, entry_log.Location]] = dataclasses.field(default_factory=list)
    ledgers: dict[int, LedgerInfo] = dataclasses.field(default_factory=dict)
    #: New full usage of entry logs; None removes a log's record.
    log_usage: dict[int, dict[int, int] | None] = dataclasses.field(default_factory=dict)
    marks: dict[int, journal.LogMark] = dataclasses.field(default_factory=dict)


class LedgerIndex:
    def __init__(self, path: pathlib.Path) -> None:
        options = Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_keep_log_file_num(2)
        self._db = Rdict(str(path), options)
        self._sync = WriteOptions()
        self._sync.sync = True

    def close(self) -> None:
        self._db.close()

    # ----- loading at start -----

    def _prefixed(self, prefix: bytes) -> list[tuple[bytes, bytes]]:
        found = []
        it = self._db.iter()
        it.seek(prefix)
        while it.valid():
            key = it.key()
            if not key.startswith(prefix):
                break
            found.append((key, it.value()))
            it.next()
        return found

    def load_ledgers(self) -> dict[int, LedgerInfo]:
        return {_LEDGER_KEY.unpack(k)[1]: LedgerInfo.unpack(v) for k, v in self._prefixed(b"L")}

    def load_log_usage(self) -> dict[int, dict[int, int]]:
        return {_LOG_KEY.unpack(k)[1]: _unpack_usage(v) for k, v in self._prefixed(b"M")}

    def load_marks(self) -> dict[int, journal.LogMark]:
        return {
            _MARK_KEY.unpack(k)[1]: journal.LogMark(*_MARK_VALUE.unpack(v))
            for k, v in self._prefixed(b"C")
        }

    # ----- entry locations -----

    def get_location(self, ledger_id: int, entry_id: int) -> entry_log.Location | None:
        value = self._db.get(entry_key(ledger_id, entry_id))
        return None if value is None else entry_log.Location.unpack(value)

    def locations_from(
        self, ledger_id: int, entry_id: int, limit: int
    ) -> list[tuple[int, entry_log.Location]]:
        """Up to limit (entry id, location) of the ledger from entry_id on, in entry order."""
        found: list[tuple[int, entry_log.Location]] = []
        it = self._db.iter()
        it.seek(entry_key(ledger_id, entry_id))
        prefix = _LEDGER_KEY.pack(b"E", ledger_id)
        while it.valid() and len(found) < limit:
            key = it.key()
            if not key.startswith(prefix):
                break
            found.append((_ENTRY_KEY.unpack(key)[2], entry_log.Location.unpack(it.value())))
            it.next()
        return found

    # ----- writes -----

    def commit(self, batch: FlushBatch) -> None:
        wb = WriteBatch(raw_mode=True)
        for ledger, entry, location in batch.locations:
            wb.put(entry_key(ledger, entry), location.pack())
        for ledger, info in batch.ledgers.items():
            wb.put(_LEDGER_KEY.pack(b"L", ledger), info.pack())
        for log_id, usage in batch.log_usage.items():
            key = _LOG_KEY.pack(b"M", log_id)
            if usage is None:
                wb.delete(key)
            else:
                wb.put(key, _pack_usage(usage))
        for journal_index, mark in batch.marks.items():
            wb.put(_MARK_KEY.pack(b"C", journal_index), _MARK_VALUE.pack(mark.file_id, mark.offset))
        self._db.write(wb, self._sync)

    def delete_ledger(self, ledger_id: int) -> None:
        wb = WriteBatch(raw_mode=True)
        wb.delete(_LEDGER_KEY.pack(b"L", ledger_id))
        wb.delete_range(entry_key(ledger_id, 0), _LEDGER_KEY.pack(b"E", ledger_id + 1))
        self._db.write(wb, self._sync)
