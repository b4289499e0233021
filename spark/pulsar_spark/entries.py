"""Reading entries straight from the bookies: the port executors use, and its ledger-client adapter.

An input partition carries, for its ledger, the ledger metadata record (who
holds which entries, quorums, password) and the last entry it may read, so
an executor needs no metadata store access: it asks the first bookie of each
entry's write set over the network bookie transport, and leaves the entries
that fail there to the replicated ledger client's read path, which tries the
rest of the write set. The open ledger is never fenced or recovered from
here: reads stop at the last entry the broker confirmed to its producers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from pulsar_bookie import errors as bookie_errors
from pulsar_bookie import types as bookie_types
from pulsar_bookie.client import ledger_metadata
from pulsar_bookie.client.replicated import reader as replicated_reader
from pulsar_bookie.client.replicated import settings as replicated_settings
from pulsar_bookie.net import client as net_client
from pulsar_bookie.storage import api as storage_api

from pulsar_spark import errors

T = TypeVar("T")

#: Entry reads one read call keeps in flight (over all bookies of the ledger).
READS_IN_FLIGHT_MAX = 256


@dataclasses.dataclass(frozen=True)
class LedgerLocation:
    """What an executor needs to read a ledger: its metadata record and its readable end."""

    ledger_id: int
    metadata_json: bytes
    last_readable_entry_id: int


class EntrySource(Protocol):
    """Entries first..last (inclusive) of a ledger, as stored bytes, in entry order."""

    def read(self, ledger: LedgerLocation, first_entry_id: int, last_entry_id: int) -> list[bytes]:
        ...

    def submit(self, ledger: LedgerLocation, first_entry_id: int, last_entry_id: int) \
            -> concurrent.futures.Future[list[bytes]]:
        """read() started in the background: the caller decodes while the bookies answer."""
        ...

    def close(self) -> None: ...


class BookieEntrySource:
    """EntrySource over the network bookie transport, on an event loop run by the caller's thread.

    The loop runs only inside calls: submit() starts a read and turns the loop
    until its requests are on their way; the bookies answer while the caller
    decodes (the answers wait in the socket buffers), and result() runs the
    loop until the read is complete. There is no second thread: on small
    virtual machines a hand-off between two threads costs 70-200 us of CPU,
    which with a loop thread was paid twice per read, ~40 us per entry.
    Connections stay open across the calls. Not for concurrent use.
    """

    def __init__(self, reads_in_flight_max: int = READS_IN_FLIGHT_MAX) -> None:
        self._loop = asyncio.new_event_loop()
        self._settings = dataclasses.replace(replicated_settings.ClientSettings(),
                                             read_batch_max=reads_in_flight_max)
        self._pool: net_client.BookieClientPool | None = None
        #: Loop time when the loop last started running (it stands still between calls).
        self._resumed_at = 0.0
        self.entries_read = 0
        self.bytes_read = 0

    def read(self, ledger: LedgerLocation, first_entry_id: int, last_entry_id: int) -> list[bytes]:
        return self.submit(ledger, first_entry_id, last_entry_id).result()

    def submit(self, ledger: LedgerLocation, first_entry_id: int, last_entry_id: int) \
            -> concurrent.futures.Future[list[bytes]]:
        task = self._loop.create_task(self._read(ledger, first_entry_id, last_entry_id))
        self.run(_turns(SUBMIT_LOOP_TURNS))
        return _LoopRead(self, task)

    def run(self, step: Awaitable[T]) -> T:
        """Runs the loop until `step` is done."""
        self._resumed_at = self._loop.time()
        return self._loop.run_until_complete(step)

    async def _read(self, ledger: LedgerLocation, first: int, last: int) -> list[bytes]:
        if self._pool is None:
            self._pool = net_client.BookieClientPool()
        metadata = ledger_metadata.from_json(ledger.metadata_json)
        handle = replicated_reader.ReplicatedReadHandle(
            metadata, self._pool, self._settings,
            bookie_types.EntryId(ledger.last_readable_entry_id))
        try:
            payloads = await read_range(handle, first, last, self._settings,
                                        lambda: self._resumed_at)
        except bookie_errors.BookieError as exc:
            raise errors.EntryReadError(
                f"ledger {ledger.ledger_id}: entries {first}..{last} unreadable from bookies "
                f"{[list(f.ensemble) for f in metadata.ensembles]}: {exc}") from exc
        self.entries_read += len(payloads)
        self.bytes_read += sum(len(p) for p in payloads)
        return payloads

    def close(self) -> None:
        if self._loop.is_closed():
            return
        pending = asyncio.all_tasks(self._loop)
        for task in pending:
            task.cancel()
        if pending:
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        if self._pool is not None:
            self._loop.run_until_complete(self._pool.close())
        self._loop.close()


#: Loop iterations submit() runs: a read's task starts, its entry reads queue their requests,
#: the connections write them (a read that must connect first sends them in result()).
SUBMIT_LOOP_TURNS = 3


async def _turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


class _LoopRead(concurrent.futures.Future[list[bytes]]):
    """A read on a BookieEntrySource's loop: result() runs that loop until the read is done."""

    def __init__(self, source: BookieEntrySource, task: asyncio.Task[list[bytes]]) -> None:
        super().__init__()
        self._source = source
        self._task = task

    def result(self, timeout: float | None = None) -> list[bytes]:
        if not self.done():
            try:
                payloads = self._source.run(self._task)
            except asyncio.CancelledError:
                super().cancel()
            except Exception as exc:  # noqa: BLE001 - handed to the caller by result()
                self.set_exception(exc)
            else:
                self.set_result(payloads)
        return super().result(timeout)

    def cancel(self) -> bool:
        self._task.cancel()
        return super().cancel()


async def read_range(handle: replicated_reader.ReplicatedReadHandle, first: int, last: int,
                     settings: replicated_settings.ClientSettings,
                     resumed_at: Callable[[], float] = lambda: 0.0) -> list[bytes]:
    """Entries first..last: each asked of the first bookie of its write set, at once.

    That costs one task per entry, where the handle's read costs three and a
    timer (~50 us of CPU more per entry, as much as decoding a sixth of its
    messages). An entry whose bookie fails, or has not answered within the
    speculative read timeout, is read again by the handle, which tries the
    write set in turn; a range the handle refuses (past the last confirmed
    entry) gets its error. `resumed_at` gives the loop time when the loop last
    started running, if its caller stops it between calls.
    """
    if first < 0 or last < first or last > handle.last_add_confirmed:
        return [entry.payload for entry in await handle.read(first, last)]
    payloads: list[bytes] = []
    for start in range(first, last + 1, settings.read_batch_max):
        stop = min(start + settings.read_batch_max, last + 1)
        payloads.extend(await _read_batch(handle, range(start, stop),
                                          settings.speculative_read_timeout_ms / 1000,
                                          resumed_at))
    return payloads


async def _read_batch(handle: replicated_reader.ReplicatedReadHandle, entry_ids: range,
                      speculative_s: float, resumed_at: Callable[[], float]) -> list[bytes]:
    password = handle.metadata.password
    reads = [asyncio.ensure_future(handle.pool.get(handle.write_set_of(e)[0]).read_entry(
        handle.ledger_id, bookie_types.EntryId(e), master_key=password)) for e in entry_ids]
    try:
        await _answered(reads, speculative_s, resumed_at)
    finally:
        for read in reads:
            if not read.done():
                read.cancel()
    missing = [e for e, read in zip(entry_ids, reads, strict=True) if not _succeeded(read)]
    again = dict(zip(missing, await asyncio.gather(*(handle.read_entry(e) for e in missing)),
                     strict=True))
    return [again[e].payload if e in again else read.result().payload
            for e, read in zip(entry_ids, reads, strict=True)]


async def _answered(reads: Sequence[asyncio.Future[storage_api.StoredEntry]], speculative_s: float,
                    resumed_at: Callable[[], float]) -> None:
    """Waits until `reads` are done or the speculative timeout has passed with the loop running.

    Time the loop stood still (the caller decoding between submit() and
    result()) does not count: when the loop runs again the answers that
    arrived meanwhile sit in the socket buffers, and the timer that expired
    meanwhile would fire before they are all taken (so every entry past the
    first socket read would be asked again of another bookie).
    """
    loop = asyncio.get_running_loop()
    start = loop.time()
    pending: set[asyncio.Future[storage_api.StoredEntry]] = set(reads)
    while pending:
        _, pending = await asyncio.wait(pending, timeout=start + speculative_s - loop.time())
        if resumed_at() <= start:
            return
        start = resumed_at()  # the loop stood still: count from when it ran again


def _succeeded(read: asyncio.Future[storage_api.StoredEntry]) -> bool:
    """Answered with the entry (a failure is retrieved here, so asyncio does not log it)."""
    return read.done() and not read.cancelled() and read.exception() is None
