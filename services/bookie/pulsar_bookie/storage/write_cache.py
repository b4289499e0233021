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

from pulsar_bookie.storage import records

#: Bytes counted per entry beyond its payload (key, tuple, dict slot).
ENTRY_OVERHEAD = 64

# (ledger id, entry id) -> (last add confirmed, payload)
CacheMap = dict[tuple[int, int], tuple[int, bytes]]


class WriteCacheHalf:
    __slots__ = ("entries", "ledger_ids", "size_bytes")

    def __init__(self) -> None:
        self.entries: CacheMap = {}
        self.size_bytes = 0
        self.ledger_ids: set[int] = set()

    def put(self, ledger_id: int, entry_id: int, lac: int, payload: bytes) -> None:
        key = (ledger_id, entry_id)
        old = self.entries.get(key)
        if old is not None:
            self.size_bytes -= len(old[1]) + ENTRY_OVERHEAD
        self.entries[key] = (lac, payload)
        self.size_bytes += len(payload) + ENTRY_OVERHEAD
        self.ledger_ids.add(ledger_id)

    def drop_ledger(self, ledger_id: int) -> None:
        if ledger_id not in self.ledger_ids:
            return
        for key in [k for k in self.entries if k[0] == ledger_id]:
            self.size_bytes -= len(self.entries.pop(key)[1]) + ENTRY_OVERHEAD
        self.ledger_ids.discard(ledger_id)

    def sorted_records(self) -> list[tuple[int, int, int, bytes]]:
        """(ledger, entry, lac, payload) in (ledger, entry) order, for the flush."""
        return [(key[0], key[1], value[0], value[1]) for key, value in sorted(self.entries.items())]


class WriteCache:
    def __init__(self, max_size_bytes: int) -> None:
        self.half_size_bytes = max(max_size_bytes // 2, 1)
        self.active = WriteCacheHalf()
        self.flushing: WriteCacheHalf | None = None

    def put(self, ledger_id: int, entry_id: int, lac: int, payload: bytes) -> None:
        self.active.put(ledger_id, entry_id, lac, payload)

    def get(self, ledger_id: int, entry_id: int) -> tuple[int, bytes] | None:
        key = (ledger_id, entry_id)
        found = self.active.entries.get(key)
        if found is None and self.flushing is not None:
            found = self.flushing.entries.get(key)
        return found

    def has_room(self, payload_size: int) -> bool:
        """Whether the active half takes this entry (an empty half takes any single entry)."""
        active = self.active
        return (
            not active.entries
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
