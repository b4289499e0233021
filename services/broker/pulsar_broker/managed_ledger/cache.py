"""The broker's entry cache: recently added entries, so tailing reads skip the bookies.

One cache is shared by every managed ledger of a factory, bounded in bytes
(managedLedgerCacheSizeMB). Entries go in when they are added; when the
limit is reached the oldest ones leave first. Catch-up reads of older data
do not pollute it. It counts hits, misses (recorded by the reader that went
to the bookies) and evictions, as Apache's cache statistics do (stats.py).

Beside the one insertion-ordered map (which decides eviction), the keys are
indexed by managed ledger and ledger id, so that dropping a trimmed ledger or
a closed managed ledger costs what it drops, not a walk over every topic's
entries (with thousands of topics, each trimming as it reloads, the walk
was a fifth of the broker's time).
"""

from __future__ import annotations

import collections

from pulsar_broker.managed_ledger import api, stats

_Key = tuple[str, int, int]


class EntryCache:
    def __init__(self, limit_bytes: int):
        if limit_bytes < 0:
            raise ValueError("the entry cache limit must not be negative")
        #: Most bytes of entry data held at once (0 disables the cache).
        self.limit_bytes = limit_bytes
        #: Every cached entry, oldest first: the eviction order.
        self._entries: collections.OrderedDict[_Key, api.Entry] = collections.OrderedDict()
        #: managed ledger name -> ledger id -> the entry ids of it held in _entries. Holds
        #: exactly the keys of _entries, and no empty map or set.
        self._index: dict[str, dict[int, set[int]]] = {}
        self._size_bytes = 0
        self.hits = 0
        self.hit_bytes = 0
        self.misses = 0
        self.miss_bytes = 0
        #: Times room had to be made for a new entry, and the entries that left for it.
        self.evictions = 0
        self.evicted_entries = 0
        self.inserted_entries = 0

    @property
    def size_bytes(self) -> int:
        return self._size_bytes

    def __len__(self) -> int:
        return len(self._entries)

    def insert(self, ledger_name: str, entry: api.Entry) -> None:
        size = len(entry.data)
        if size > self.limit_bytes:
            return
        ledger_id, entry_id = entry.position.ledger_id, entry.position.entry_id
        key = (ledger_name, ledger_id, entry_id)
        if key in self._entries:
            return
        if self._size_bytes + size > self.limit_bytes:
            self._make_room(size)
        self._entries[key] = entry
        # On every cached add: look up before making containers (setdefault would build a
        # dict and a set each time).
        ledgers = self._index.get(ledger_name)
        if ledgers is None:
            ledgers = self._index[ledger_name] = {}
        ids = ledgers.get(ledger_id)
        if ids is None:
            ids = ledgers[ledger_id] = set()
        ids.add(entry_id)
        self._size_bytes += size
        self.inserted_entries += 1

    def _make_room(self, size: int) -> None:
        self.evictions += 1
        while self._size_bytes + size > self.limit_bytes:
            key, oldest = self._entries.popitem(last=False)
            self._unindex(key)
            self._size_bytes -= len(oldest.data)
            self.evicted_entries += 1

    def _unindex(self, key: _Key) -> None:
        ledger_name, ledger_id, entry_id = key
        ledgers = self._index[ledger_name]
        entry_ids = ledgers[ledger_id]
        entry_ids.discard(entry_id)
        if not entry_ids:
            del ledgers[ledger_id]
            if not ledgers:
                del self._index[ledger_name]

    def get(self, ledger_name: str, position: api.Position) -> api.Entry | None:
        """The cached entry (a hit is counted), or None (the caller counts what it then
        reads from the bookies with record_misses)."""
        entry = self._entries.get((ledger_name, position.ledger_id, position.entry_id))
        if entry is not None:
            self.hits += 1
            self.hit_bytes += len(entry.data)
        return entry

    def record_misses(self, entries: int, size_bytes: int) -> None:
        """entries (size_bytes in all) were read from the bookies: the cache lacked them."""
        self.misses += entries
        self.miss_bytes += size_bytes

    def counts(self) -> stats.CacheCounts:
        return stats.CacheCounts(
            used_bytes=self._size_bytes, entries=len(self._entries), hits=self.hits,
            hit_bytes=self.hit_bytes, misses=self.misses, miss_bytes=self.miss_bytes,
            evictions=self.evictions, inserted_entries=self.inserted_entries,
            evicted_entries=self.evicted_entries)

    def contains(self, ledger_name: str, position: api.Position) -> bool:
        return (ledger_name, position.ledger_id, position.entry_id) in self._entries

    def invalidate_ledger(self, ledger_name: str, ledger_id: int) -> None:
        """Drop the entries of one ledger (it was trimmed or deleted)."""
        ledgers = self._index.get(ledger_name)
        if ledgers is None:
            return
        entry_ids = ledgers.pop(ledger_id, None)
        if entry_ids is None:
            return
        if not ledgers:
            del self._index[ledger_name]
        self._drop(ledger_name, ledger_id, entry_ids)

    def invalidate_all(self, ledger_name: str) -> None:
        """Drop every entry of one managed ledger (it was closed or deleted)."""
        for ledger_id, entry_ids in self._index.pop(ledger_name, {}).items():
            self._drop(ledger_name, ledger_id, entry_ids)

    def _drop(self, ledger_name: str, ledger_id: int, entry_ids: set[int]) -> None:
        """Remove the (already unindexed) entries from the eviction order and the size."""
        for entry_id in entry_ids:
            self._size_bytes -= len(self._entries.pop((ledger_name, ledger_id, entry_id)).data)
