"""The write cache: entries added since the last flush, readable until they reach entry logs.

As in BookKeeper's DbLedgerStorage it has two halves. Adds go into the active
half; a flush swaps it out as the "flushing" half (still readable) and writes
it to entry logs sorted by (ledger, entry). Each half holds at most half of
dbStorage_writeCacheMaxSizeMb; when the active half is full while the other
is still flushing, adds wait (the engine does the waiting).

Used only from the event loop thread, except that a flush thread reads a
swapped-out half that nobody changes any more.
"""

from __future__ import annotations

from collections.abc import Iterator

from pulsar_bookie.storage import records

#: Bytes counted per entry beyond its payload (key, tuple, dict slot).
ENTRY_OVERHEAD = 64

# entry id -> (last add confirmed, payload), per ledger
LedgerEntries = dict[int, tuple[int, bytes]]


class WriteCacheHalf:
    """Entries grouped by ledger: a ledger's entries mostly arrive in order, so sorting is cheap."""

    __slots__ = ("count", "ledgers", "size_bytes")

    def __init__(self) -> None:
        self.ledgers: dict[int, LedgerEntries] = {}
        self.size_bytes = 0
        self.count = 0

    def put(self, ledger_id: int, entry_id: int, lac: int, payload: bytes) -> None:
        entries = self.ledgers.get(ledger_id)
        if entries is None:
            entries = self.ledgers[ledger_id] = {}
        old = entries.get(entry_id)
        if old is None:
            self.count += 1
        else:
            self.size_bytes -= len(old[1]) + ENTRY_OVERHEAD
        entries[entry_id] = (lac, payload)
        self.size_bytes += len(payload) + ENTRY_OVERHEAD

    def get(self, ledger_id: int, entry_id: int) -> tuple[int, bytes] | None:
        entries = self.ledgers.get(ledger_id)
        return None if entries is None else entries.get(entry_id)

    def drop_ledger(self, ledger_id: int) -> None:
        entries = self.ledgers.pop(ledger_id, None)
        if entries is not None:
            self.count -= len(entries)
            self.size_bytes -= sum(len(v[1]) for v in entries.values()) + ENTRY_OVERHEAD * len(
                entries
            )

    def items(self) -> Iterator[tuple[int, int, int, bytes]]:
        """(ledger, entry, lac, payload) in insertion order."""
        for ledger_id, entries in self.ledgers.items():
            for entry_id, (lac, payload) in entries.items():
                yield ledger_id, entry_id, lac, payload

    def sorted_records(self) -> list[tuple[int, int, int, bytes]]:
        """(ledger, entry, lac, payload) in (ledger, entry) order, for the flush."""
        result: list[tuple[int, int, int, bytes]] = []
        for ledger_id in sorted(self.ledgers):
            entries = self.ledgers[ledger_id]
            result.extend((ledger_id, entry_id, *entries[entry_id]) for entry_id in sorted(entries))
        return result


class WriteCache:
    def __init__(self, max_size_bytes: int) -> None:
        self.half_size_bytes = max(max_size_bytes // 2, 1)
        self.active = WriteCacheHalf()
        self.flushing: WriteCacheHalf | None = None

    def put(self, ledger_id: int, entry_id: int, lac: int, payload: bytes) -> None:
        self.active.put(ledger_id, entry_id, lac, payload)

    def get(self, ledger_id: int, entry_id: int) -> tuple[int, bytes] | None:
        found = self.active.get(ledger_id, entry_id)
        if found is None and self.flushing is not None:
            found = self.flushing.get(ledger_id, entry_id)
        return found

    def has_room(self, payload_size: int) -> bool:
        """Whether the active half takes this entry (an empty half takes any single entry)."""
        active = self.active
        return (
            not active.count
            or active.size_bytes + payload_size + ENTRY_OVERHEAD <= self.half_size_bytes
        )

    @property
    def active_full(self) -> bool:
        return self.active.size_bytes >= self.half_size_bytes

    def swap(self) -> WriteCacheHalf:
        """Start a flush: the active half becomes the flushing one."""
        assert self.flushing is None, "a flush is already running"
        self.flushing, self.active = self.active, WriteCacheHalf()
        return self.flushing

    def flushed(self) -> None:
        self.flushing = None

    def drop_ledger(self, ledger_id: int) -> None:
        self.active.drop_ledger(ledger_id)
        if self.flushing is not None:
            self.flushing.drop_ledger(ledger_id)

    @property
    def size_bytes(self) -> int:
        return self.active.size_bytes + (self.flushing.size_bytes if self.flushing else 0)


def record_size(payload_size: int) -> int:
    """Bytes an entry takes in an entry log."""
    return records.HEADER_SIZE + records.ENTRY_FIELDS_SIZE + payload_size
