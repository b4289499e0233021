"""Reading entries of a managed ledger: from the entry cache first, then from its ledgers.

Keeps a bounded set of open read handles (one per ledger recently read) and
the write handle of the current ledger, which serves tailing reads that
missed the cache. Counts the entries read, the read errors and the cache
misses (stats.py).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Sequence

from pulsar_bookie import errors as bookie_errors
from pulsar_bookie import types
from pulsar_bookie.client import api as client_api

from pulsar_broker.managed_ledger import api, cache, errors, stats

#: Read handles of older ledgers kept open at once per managed ledger.
READ_HANDLES_MAX = 8


class LedgerReader:
    def __init__(
        self,
        name: str,
        client: client_api.LedgerClient,
        entry_cache: cache.EntryCache,
        password: bytes,
        ml_stats: stats.ManagedLedgerStats,
    ):
        self._name = name
        self._stats = ml_stats
        self._client = client
        self._cache = entry_cache
        self._password = password
        self._handles: collections.OrderedDict[int, client_api.ReadHandle] = (
            collections.OrderedDict()
        )
        self._opening: dict[int, asyncio.Task[client_api.ReadHandle]] = {}
        self._current: client_api.ReadHandle | None = None

    def set_current(self, handle: client_api.ReadHandle | None) -> None:
        """The ledger being written; a previous current handle stays usable for reads."""
        if self._current is not None:
            self._remember(self._current)
        self._current = handle

    async def read(self, ledger_id: int, first: int, last: int) -> list[api.Entry]:
        """Entries first..last of one ledger, in order."""
        result: list[api.Entry] = []
        size = 0
        entry_id = first
        while entry_id <= last:
            cached = self._cache.get(self._name, api.Position(ledger_id, entry_id))
            if cached is not None:
                result.append(cached)
                size += len(cached.data)
                entry_id += 1
                continue
            miss_end = entry_id
            while miss_end < last and not self._is_cached(ledger_id, miss_end + 1):
                miss_end += 1
            read = await self._read_from_ledger(ledger_id, entry_id, miss_end)
            read_size = sum(len(entry.data) for entry in read)
            self._cache.record_misses(len(read), read_size)
            self._stats.cache_missed_entries += len(read)
            result.extend(read)
            size += read_size
            entry_id = miss_end + 1
        self._stats.entries_read += len(result)
        self._stats.read_bytes += size
        return result

    async def read_positions(
        self, positions: Sequence[api.Position], max_bytes: int | None = None
    ) -> list[api.Entry]:
        """Entries at these positions (in order), stopping once max_bytes are gathered."""
        entries: list[api.Entry] = []
        size = 0
        for ledger_id, first, last in _runs(positions):
            for entry in await self.read(ledger_id, first, last):
                entries.append(entry)
                size += len(entry.data)
                if max_bytes is not None and size >= max_bytes:
                    return entries
        return entries

    async def forget(self, ledger_id: int) -> None:
        """The ledger was deleted: close its handle and drop its cached entries."""
        self._cache.invalidate_ledger(self._name, ledger_id)
        handle = self._handles.pop(ledger_id, None)
        if handle is not None:
            await handle.close()

    async def close(self) -> None:
        for task in self._opening.values():
            task.cancel()
        handles = list(self._handles.values())
        self._handles.clear()
        for handle in handles:
            await handle.close()
        self._cache.invalidate_all(self._name)

    def _is_cached(self, ledger_id: int, entry_id: int) -> bool:
        return self._cache.contains(self._name, api.Position(ledger_id, entry_id))

    async def _read_from_ledger(self, ledger_id: int, first: int, last: int) -> list[api.Entry]:
        try:
            handle = await self._handle(ledger_id)
            entries = await handle.read(first, last)
        except errors.NonRecoverableLedgerError:
            self._stats.read_errors += 1
            raise
        except bookie_errors.BookieError as exc:
            self._stats.read_errors += 1
            raise errors.NonRecoverableLedgerError(
                f"{self._name}: cannot read {ledger_id}:{first}..{last}: {exc}"
            ) from exc
        return [api.Entry(api.Position(e.ledger_id, e.entry_id), e.payload) for e in entries]

    async def _handle(self, ledger_id: int) -> client_api.ReadHandle:
        if self._current is not None and self._current.ledger_id == ledger_id:
            return self._current
        handle = self._handles.get(ledger_id)
        if handle is not None:
            self._handles.move_to_end(ledger_id)
            return handle
        task = self._opening.get(ledger_id)
        if task is None:
            task = asyncio.ensure_future(self._open(types.LedgerId(ledger_id)))
            self._opening[ledger_id] = task
        return await asyncio.shield(task)

    async def _open(self, ledger_id: types.LedgerId) -> client_api.ReadHandle:
        try:
            handle = await self._client.open_ledger(
                ledger_id, recovery=True, password=self._password
            )
        except bookie_errors.BookieError as exc:
            raise errors.NonRecoverableLedgerError(
                f"{self._name}: cannot open ledger {ledger_id}: {exc}"
            ) from exc
        finally:
            self._opening.pop(ledger_id, None)
        self._remember(handle)
        return handle

    def _remember(self, handle: client_api.ReadHandle) -> None:
        self._handles[handle.ledger_id] = handle
        self._handles.move_to_end(handle.ledger_id)
        while len(self._handles) > READ_HANDLES_MAX:
            _, oldest = self._handles.popitem(last=False)
            asyncio.ensure_future(oldest.close())


def _runs(positions: Sequence[api.Position]) -> list[tuple[int, int, int]]:
    """Group positions into (ledger, first entry, last entry) runs of consecutive entries."""
    runs: list[tuple[int, int, int]] = []
    for position in positions:
        if runs and runs[-1][0] == position.ledger_id and runs[-1][2] + 1 == position.entry_id:
            runs[-1] = (runs[-1][0], runs[-1][1], position.entry_id)
        else:
            runs.append((position.ledger_id, position.entry_id, position.entry_id))
    return runs

