"""Reading a ledger: from any bookie of an entry's write set, with speculative retries.

Reads never go past the LAC (or, for a closed ledger, its last entry). A read
tries the write set's bookies in turn; if the first has not answered within
the speculative timeout, the next is asked as well and the first good answer
wins. A tailing reader asks bookies for a newer LAC (long poll).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from typing import Any

from pulsar_bookie import errors, types
from pulsar_bookie.client import api, bookie_rpc
from pulsar_bookie.client.replicated import schedule
from pulsar_bookie.client.replicated.settings import ClientSettings
from pulsar_bookie.storage import api as storage_api


class ReplicatedReadHandle:
    def __init__(
        self,
        metadata: api.LedgerMetadata,
        pool: bookie_rpc.BookieRpcPool,
        settings: ClientSettings,
        last_add_confirmed: types.EntryId,
    ) -> None:
        self._metadata = metadata
        self._pool = pool
        self._settings = settings
        self._lac = (metadata.last_entry_id if metadata.is_closed else last_add_confirmed)

    @property
    def ledger_id(self) -> types.LedgerId:
        return self._metadata.ledger_id

    @property
    def metadata(self) -> api.LedgerMetadata:
        return self._metadata

    @property
    def pool(self) -> bookie_rpc.BookieRpcPool:
        return self._pool

    @property
    def settings(self) -> ClientSettings:
        return self._settings

    @property
    def last_add_confirmed(self) -> types.EntryId:
        return self._lac

    @property
    def length(self) -> int:
        return self._metadata.length

    def fragment_for(self, entry_id: int) -> api.Fragment:
        found = self._metadata.ensembles[0]
        for fragment in self._metadata.ensembles:
            if fragment.first_entry_id <= entry_id:
                found = fragment
            else:
                break
        return found

    def write_set_of(self, entry_id: int) -> list[types.BookieId]:
        ensemble = self.fragment_for(entry_id).ensemble
        return [ensemble[i] for i in schedule.write_set(
            entry_id, self._metadata.ensemble_size, self._metadata.write_quorum_size)]

    async def read(self, first_entry_id: int, last_entry_id: int) -> Sequence[api.LedgerEntry]:
        if first_entry_id < 0 or last_entry_id < first_entry_id:
            raise errors.BookieError(f"invalid entry range {first_entry_id}..{last_entry_id}")
        if last_entry_id > self._lac:
            raise errors.NoSuchEntryError(
                f"ledger {self.ledger_id}: entry {last_entry_id} is beyond the last confirmed "
                f"entry {self._lac}")
        entries: list[api.LedgerEntry] = []
        batch = self._settings.read_batch_max
        for start in range(first_entry_id, last_entry_id + 1, batch):
            stop = min(start + batch, last_entry_id + 1)
            stored = await _RangeRead(self, start, stop).done
            entries.extend(api.LedgerEntry(self.ledger_id, s.entry_id, s.payload) for s in stored)
        return entries

    async def read_entry(self, entry_id: int, *, fence: bool = False,
                         first_bookie: int = 0) -> storage_api.StoredEntry:
        """One entry from its write set, trying bookies in turn with speculative overlap,
        from the write set's `first_bookie`-th member on (then around to the others)."""
        bookies = self.write_set_of(entry_id)
        bookies = bookies[first_bookie:] + bookies[:first_bookie]
        speculative_s = self._settings.speculative_read_timeout_ms / 1000
        timeout_s = self._settings.read_entry_timeout_ms / 1000
        attempts: set[asyncio.Task[storage_api.StoredEntry]] = set()
        failures: list[BaseException] = []
        remaining = list(bookies)
        try:
            while remaining or attempts:
                if remaining:
                    bookie = remaining.pop(0)
                    attempts.add(asyncio.ensure_future(asyncio.wait_for(
                        self._pool.get(bookie).read_entry(
                            self.ledger_id, types.EntryId(entry_id), fence=fence,
                            master_key=self._metadata.password),
                        timeout_s)))
                done, attempts = await asyncio.wait(
                    attempts, timeout=speculative_s if remaining else None,
                    return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task.exception() is None:
                        return task.result()
                    failures.append(task.exception())  # type: ignore[arg-type]
        finally:
            for task in attempts:
                task.cancel()
        if failures and all(isinstance(f, errors.NoSuchEntryError) for f in failures):
            raise errors.NoSuchEntryError(
                f"ledger {self.ledger_id}: no bookie has entry {entry_id}") from failures[-1]
        raise errors.BookieUnavailableError(
            f"ledger {self.ledger_id}: entry {entry_id} unreadable from {bookies}") from (
                failures[-1] if failures else None)

    async def read_last_add_confirmed(self) -> types.EntryId:
        """Ask the current ensemble; the highest answer is safe (a LAC is only ever sent
        for entries already acknowledged)."""
        if self._metadata.is_closed:
            return self._lac
        answers = await asyncio.gather(
            *(self._pool.get(b).read_last_add_confirmed(self.ledger_id)
              for b in self._metadata.ensembles[-1].ensemble),
            return_exceptions=True)
        for answer in answers:
            if isinstance(answer, int) and answer > self._lac:
                self._lac = types.EntryId(answer)
        return self._lac

    async def wait_last_add_confirmed(self, timeout_ms: int) -> types.EntryId:
        """Long poll: return once some bookie knows a LAC above ours, or after timeout_ms."""
        if self._metadata.is_closed:
            return self._lac
        polls = [asyncio.ensure_future(self._pool.get(b).wait_last_add_confirmed(
            self.ledger_id, self._lac, timeout_ms)) for b in self._metadata.ensembles[-1].ensemble]
        try:
            pending = set(polls)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    if task.exception() is None and task.result() > self._lac:
                        self._lac = task.result()
                        return self._lac
        finally:
            for task in polls:
                task.cancel()
        return self._lac

    async def close(self) -> None:
        return None


class _RangeRead:
    """Entries start..stop-1 of a ledger, with no task per entry while bookies answer.

    Each entry is asked of the first bookie of its write set with
    `BookieRpc.read_entry_future` (the bookie connection keeps readEntryTimeoutMs). An entry
    whose bookie fails, or that has no answer once speculativeReadTimeout has passed, goes
    on in `read_entry` from the next bookie of its write set (a task, only for it); the
    first good answer fills its place. The first entry that cannot be read fails the range.
    Once the range is done, what is still out is cancelled.
    """

    def __init__(self, handle: ReplicatedReadHandle, start: int, stop: int) -> None:
        loop = asyncio.get_running_loop()
        self._handle = handle
        self._start = start
        self._entries: list[storage_api.StoredEntry | None] = [None] * (stop - start)
        self._missing = stop - start
        self._fallbacks: dict[int, asyncio.Task[storage_api.StoredEntry]] = {}
        self._reads: list[asyncio.Future[storage_api.StoredEntry]] = []
        self.done: asyncio.Future[list[storage_api.StoredEntry]] = loop.create_future()
        self.done.add_done_callback(self._finished)
        self._timer: asyncio.TimerHandle | None = None
        settings = handle.settings
        timeout_s = settings.read_entry_timeout_ms / 1000
        for entry_id in range(start, stop):
            bookie = handle.write_set_of(entry_id)[0]
            try:
                read = handle.pool.get(bookie).read_entry_future(
                    handle.ledger_id, types.EntryId(entry_id), timeout_s)
            except Exception:  # noqa: BLE001 - refused at once: the next bookies are asked
                self._fall_back(entry_id)
                continue
            read.add_done_callback(functools.partial(self._on_read, entry_id))
            self._reads.append(read)
        if handle.metadata.write_quorum_size > 1:
            self._timer = loop.call_later(settings.speculative_read_timeout_ms / 1000,
                                          self._speculate)

    def _on_read(self, entry_id: int, read: asyncio.Future[storage_api.StoredEntry]) -> None:
        if self.done.done() or self._entries[entry_id - self._start] is not None:
            return
        if read.cancelled() or read.exception() is not None:
            self._fall_back(entry_id)
        else:
            self._fill(entry_id, read.result())

    def _fall_back(self, entry_id: int) -> None:
        if entry_id in self._fallbacks or self.done.done():
            return
        task = asyncio.ensure_future(self._handle.read_entry(entry_id, first_bookie=1))
        self._fallbacks[entry_id] = task
        task.add_done_callback(functools.partial(self._on_fallback, entry_id))

    def _on_fallback(self, entry_id: int, task: asyncio.Task[storage_api.StoredEntry]) -> None:
        if self.done.done() or task.cancelled():
            return
        failure = task.exception()
        if failure is not None:
            self.done.set_exception(failure)
        elif self._entries[entry_id - self._start] is None:
            self._fill(entry_id, task.result())

    def _fill(self, entry_id: int, entry: storage_api.StoredEntry) -> None:
        self._entries[entry_id - self._start] = entry
        self._missing -= 1
        if not self._missing:
            self.done.set_result(self._entries)  # type: ignore[arg-type]  # none is None now

    def _speculate(self) -> None:
        self._timer = None
        for index, entry in enumerate(self._entries):
            if entry is None:
                self._fall_back(self._start + index)

    def _finished(self, _done: Any) -> None:
        if self._timer is not None:
            self._timer.cancel()
        # What is still out is no longer wanted (a late answer would be dropped anyway).
        for read in self._reads:
            read.cancel()
        for task in self._fallbacks.values():
            task.cancel()
