"""The broker's entry cache: recently added entries, so tailing reads skip the bookies.

One cache is shared by every managed ledger of a factory, bounded in bytes
(managedLedgerCacheSizeMB). Entries go in when they are added; when the
limit is reached the oldest ones leave first. Catch-up reads of older data
do not pollute it.
"""

from __future__ import annotations

import collections
from collections.abc import Callable

from pulsar_broker.managed_ledger import api

_Key = tuple[str, int, int]


class EntryCache:
    def __init__(self, limit_bytes: int):
        if limit_bytes < 0:
            raise ValueError("the entry cache limit must not be negative")
        #: Most bytes of entry data held at once (0 disables the cache).
        self.limit_bytes = limit_bytes
        self._entries: collections.OrderedDict[_Key, api.Entry] = collections.OrderedDict()
        self._size_bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0

    @property
    def size_bytes(self) -> int:
        return self._size_bytes

    def __len__(self) -> int:
        return len(self._entries)

    def insert(self, ledger_name: str, entry: api.Entry) -> None:
        size = len(entry.data)
        if size > self.limit_bytes:
            return
        key = (ledger_name, entry.position.ledger_id, entry.position.entry_id)
        if key in self._entries:
            return
        while self._size_bytes + size > self.limit_bytes:
            _, oldest = self._entries.popitem(last=False)
            self._size_bytes -= len(oldest.data)
            self.evictions += 1
        self._entries[key] = entry
        self._size_bytes += size

    def get(self, ledger_name: str, position: api.Position) -> api.Entry | None:
        entry = self._entries.get((ledger_name, position.ledger_id, position.entry_id))
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def contains(self, ledger_name: str, position: api.Position) -> bool:
        return (ledger_name, position.ledger_id, position.entry_id) in self._entries

    def invalidate_ledger(self, ledger_name: str, ledger_id: int) -> None:
        """Drop the entries of one ledger (it was trimmed or deleted)."""
        self._drop(lambda key: key[0] == ledger_name and key[1] == ledger_id)

    def invalidate_all(self, ledger_name: str) -> None:
        """Drop every entry of one managed ledger (it was closed or deleted)."""
        self._drop(lambda key: key[0] == ledger_name)

    def _drop(self, matches: Callable[[_Key], bool]) -> None:
        for key in [k for k in self._entries if matches(k)]:
            self._size_bytes -= len(self._entries.pop(key).data)
