"""The read cache: entries read ahead from entry logs, bounded by dbStorage_readAheadCacheMaxSizeMb.

A read that has to go to an entry log also reads the following entries of
the same ledger (dbStorage_readAheadCacheBatchSize of them) and keeps them
here, because catch-up readers read ledgers sequentially. The oldest entries
are evicted first. Reader threads and the event loop share it under a lock.
"""

from __future__ import annotations

import collections
import threading

from pulsar_bookie.storage import write_cache

# (ledger, entry) -> (last add confirmed, payload)
_Key = tuple[int, int]


class ReadCache:
    def __init__(self, max_size_bytes: int) -> None:
        self.max_size_bytes = max_size_bytes
        self.size_bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: collections.OrderedDict[_Key, tuple[int, bytes]] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, ledger_id: int, entry_id: int) -> tuple[int, bytes] | None:
        with self._lock:
            found = self._entries.get((ledger_id, entry_id))
            if found is None:
                self.misses += 1
            else:
                self.hits += 1
            return found

    def peek(self, ledger_id: int, entry_id: int) -> tuple[int, bytes] | None:
        """Look again after a miss was already counted: a find counts as a hit."""
        with self._lock:
            found = self._entries.get((ledger_id, entry_id))
            if found is not None:
                self.hits += 1
            return found

    def put(self, ledger_id: int, entry_id: int, lac: int, payload: bytes) -> None:
        cost = len(payload) + write_cache.ENTRY_OVERHEAD
        if cost > self.max_size_bytes:
            return
        key = (ledger_id, entry_id)
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.size_bytes -= len(old[1]) + write_cache.ENTRY_OVERHEAD
            while self._entries and self.size_bytes + cost > self.max_size_bytes:
                _, evicted = self._entries.popitem(last=False)
                self.size_bytes -= len(evicted[1]) + write_cache.ENTRY_OVERHEAD
            self._entries[key] = (lac, payload)
            self.size_bytes += cost

    def drop_ledger(self, ledger_id: int) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == ledger_id]:
                self.size_bytes -= len(self._entries.pop(key)[1]) + write_cache.ENTRY_OVERHEAD

    def __len__(self) -> int:
        return len(self._entries)
