"""The single writer of a ledger: striped adds, quorum acknowledgement, ensemble changes.

Every append gets the next entry id and goes to its write set. It completes,
strictly in entry order, once AQ bookies of the write set have it; the LAC
(last add confirmed) is then the highest entry completed, and travels with
later adds. A bookie that fails or times out is replaced by another in a new
fragment starting at the first entry not yet confirmed (metadata changed by
CAS); pending entries are resent to it. A fenced reply means a reader has
recovered the ledger: every pending and later append fails.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import logging
import random
from typing import Any

from pulsar_common import backoff

from pulsar_bookie import errors, types
from pulsar_bookie.client import api, bookie_rpc, ledger_metadata
from pulsar_bookie.client.replicated import placement
from pulsar_bookie.client.replicated.reader import ReplicatedReadHandle
from pulsar_bookie.client.replicated.settings import ClientSettings

log = logging.getLogger(__name__)

#: Pauses while no bookie can replace a failed one (all others are in the ensemble or
#: down): doubling from a twentieth of a second to a second, until the ensemble change
#: timeout runs out.
ENSEMBLE_CHANGE_RETRY = backoff.BackoffPolicy(first_s=0.05, max_s=1.0)


@dataclasses.dataclass(eq=False)
class PendingAdd:
    entry_id: int
    payload: bytes
    future: asyncio.Future[types.EntryId]
    acked: set[types.BookieId] = dataclasses.field(default_factory=set)
    sent_to: set[types.BookieId] = dataclasses.field(default_factory=set)


class ReplicatedWriteHandle(ReplicatedReadHandle):
    def __init__(
        self,
        versioned: ledger_metadata.VersionedMetadata,
        meta: ledger_metadata.LedgerMetadataStore,
        pool: bookie_rpc.BookieRpcPool,
        *,
        source: placement.BookieSource,
        settings: ClientSettings,
        rng: random.Random,
    ) -> None:
        super().__init__(versioned.metadata, pool, settings, types.INVALID_ENTRY_ID)
        self._versioned = versioned
        self._meta = meta
        self._source = source
        self._rng = rng
        self._pending: collections.deque[PendingAdd] = collections.deque()
        self._next_entry_id = 0
        self._length = 0
        self._failure: BaseException | None = None
        self._closed = False
        self._change_lock = asyncio.Lock()
        self._room = asyncio.Event()
        self._room.set()
        self._tasks: set[asyncio.Task[Any]] = set()

    # Writing

    @property
    def length(self) -> int:
        return self._length

    @property
    def ensemble(self) -> tuple[types.BookieId, ...]:
        return self._metadata.ensembles[-1].ensemble

    async def append(self, payload: bytes) -> types.EntryId:
        while not self._room.is_set():
            await self._room.wait()
        self._check_writable()
        return await self._start(payload)

    def append_future(self, payload: bytes) -> asyncio.Future[types.EntryId]:
        """Append without a coroutine: a future for the entry id, completed in entry order.
        Refusals raise at once. Past pendingAddsMax adds in flight the add waits for room
        in a task, as append does."""
        self._check_writable()
        if not self._room.is_set():
            return asyncio.ensure_future(self.append(payload))
        return self._start(payload)

    def _start(self, payload: bytes) -> asyncio.Future[types.EntryId]:
        pending = PendingAdd(self._next_entry_id, payload,
                             asyncio.get_running_loop().create_future())
        self._next_entry_id += 1
        self._pending.append(pending)
        if len(self._pending) >= self._settings.pending_adds_max:
            self._room.clear()
        self._send_missing(pending)
        return pending.future

    def _check_writable(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise errors.LedgerClosedError(f"ledger {self.ledger_id} is closed")

    def _send_missing(self, pending: PendingAdd) -> None:
        for bookie in self.write_set_of(pending.entry_id):
            if bookie not in pending.sent_to:
                pending.sent_to.add(bookie)
                self._send(pending, bookie)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send(self, pending: PendingAdd, bookie: types.BookieId) -> None:
        """One add to one bookie: a future and a callback, no task (the bookie connection
        times the add out after addEntryTimeoutMs)."""
        try:
            added = self._pool.get(bookie).add_entry_future(
                self.ledger_id, types.EntryId(pending.entry_id), self._lac, pending.payload,
                self._metadata.password, self._settings.add_entry_timeout_ms / 1000)
        except Exception as exc:  # noqa: BLE001 - refused at once: the same as a failed add
            self._add_failed(pending, bookie, exc)
            return
        added.add_done_callback(functools.partial(self._on_added, pending, bookie))

    def _on_added(self, pending: PendingAdd, bookie: types.BookieId,
                  added: asyncio.Future[None]) -> None:
        if added.cancelled():
            failure: BaseException | None = errors.BookieUnavailableError(
                f"add of entry {pending.entry_id} to {bookie} was cancelled")
        else:
            failure = added.exception()
        if failure is None:
            pending.acked.add(bookie)
            self._complete_in_order()
        else:
            self._add_failed(pending, bookie, failure)

    def _add_failed(self, pending: PendingAdd, bookie: types.BookieId,
                    failure: BaseException) -> None:
        if isinstance(failure, errors.LedgerFencedError):
            self._fail(errors.LedgerFencedError(
                f"ledger {self.ledger_id} was fenced by a recovering reader"), failure)
        elif isinstance(failure, errors.UnauthorizedAccessError):
            self._fail(failure, failure)
        elif isinstance(failure, (errors.BookieError, TimeoutError, OSError)):
            # The bookie may come back as a replacement later: it must then be sent again.
            pending.sent_to.discard(bookie)
            if self._failure is None and not pending.future.done():
                self._spawn(self._replace_and_resend(pending, bookie, failure))
        else:
            self._fail(errors.BookieError(
                f"ledger {self.ledger_id}: add to {bookie} failed: {failure!r}"), failure)

    async def _replace_and_resend(self, pending: PendingAdd, bookie: types.BookieId,
                                  cause: BaseException) -> None:
        await self._replace(bookie, cause)
        self._send_missing(pending)

    def _complete_in_order(self) -> None:
        aq = self._metadata.ack_quorum_size
        while self._pending:
            head = self._pending[0]
            members = set(self.write_set_of(head.entry_id))
            if len(head.acked & members) < aq:
                break
            self._pending.popleft()
            self._lac = types.EntryId(head.entry_id)
            self._length += len(head.payload)
            if not head.future.done():
                head.future.set_result(types.EntryId(head.entry_id))
        if len(self._pending) < self._settings.pending_adds_max:
            self._room.set()

    def _fail(self, failure: BaseException, cause: BaseException) -> None:
        if self._failure is None:
            self._failure = failure
            failure.__cause__ = cause
            log.warning("ledger %s: writer stops: %s", self.ledger_id, failure)
        while self._pending:
            pending = self._pending.popleft()
            if not pending.future.done():
                pending.future.set_exception(self._failure)
        self._room.set()

    # Ensemble change

    async def _replace(self, failed: types.BookieId, cause: BaseException) -> None:
        """Swap failed out of the current ensemble (once, however many adds noticed)."""
        async with self._change_lock:
            if self._failure is not None or failed not in self.ensemble:
                return
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self._settings.ensemble_change_timeout_ms / 1000
            delays = ENSEMBLE_CHANGE_RETRY.start()
            while True:
                try:
                    await self._change_ensemble(failed)
                    return
                except placement.NotEnoughBookiesError as exc:
                    delay = delays.next_delay()
                    if loop.time() + delay > deadline:
                        self._fail(errors.BookieUnavailableError(
                            f"ledger {self.ledger_id}: no bookie to replace {failed}"), exc)
                        return
                    await asyncio.sleep(delay)
                except errors.MetadataVersionError:
                    # Someone else changed the metadata (autorecovery, or a recovering
                    # reader): continue from theirs unless the ledger is no longer ours.
                    fresh = await self._meta.read(self.ledger_id)
                    if fresh.metadata.state is not api.LedgerState.OPEN:
                        self._fail(errors.LedgerFencedError(
                            f"ledger {self.ledger_id} is being recovered by another client"),
                            cause)
                        return
                    self._metadata = fresh.metadata
                    self._versioned = fresh

    async def _change_ensemble(self, failed: types.BookieId) -> None:
        candidates = await self._source.bookies()
        replacement = placement.replace_bookie(candidates, self.ensemble, failed, self._rng)
        ensemble = tuple(replacement if b == failed else b for b in self.ensemble)
        first = types.EntryId(self._lac + 1)
        fragments = list(self._metadata.ensembles)
        if fragments[-1].first_entry_id == first:
            fragments[-1] = api.Fragment(first, ensemble)
        else:
            fragments.append(api.Fragment(first, ensemble))
        updated = dataclasses.replace(self._metadata, ensembles=tuple(fragments))
        self._versioned = await self._meta.write(updated, self._versioned.version)
        self._metadata = updated
        log.info("ledger %s: replaced bookie %s by %s from entry %s", self.ledger_id, failed,
                 replacement, first)
        for pending in list(self._pending):
            self._send_missing(pending)

    # Closing

    async def close(self) -> None:
        """Wait for adds in flight, then seal the ledger at its LAC by CAS."""
        if self._closed:
            return
        self._closed = True
        waiting = [p.future for p in self._pending]
        if waiting:
            await asyncio.gather(*waiting, return_exceptions=True)
        if self._failure is not None and isinstance(self._failure, errors.LedgerFencedError):
            return
        await self._seal()
        for task in list(self._tasks):
            task.cancel()

    async def _seal(self) -> None:
        """CLOSED at our LAC by CAS. Autorecovery may have swapped bookies of earlier
        fragments meanwhile: while the ledger is still OPEN with our last fragment, seal
        on top of its metadata instead of failing."""
        while True:
            sealed = dataclasses.replace(
                self._metadata, state=api.LedgerState.CLOSED, last_entry_id=self._lac,
                length=self._length)
            try:
                self._versioned = await self._meta.write(sealed, self._versioned.version)
                self._metadata = sealed
                return
            except errors.MetadataVersionError:
                fresh = await self._meta.read(self.ledger_id)
            if fresh.metadata.is_closed and fresh.metadata.last_entry_id >= self._lac:
                self._metadata = fresh.metadata
                return
            if (fresh.metadata.state is not api.LedgerState.OPEN
                    or fresh.metadata.ensembles[-1] != self._metadata.ensembles[-1]):
                self._metadata = fresh.metadata
                raise errors.MetadataVersionError(
                    f"ledger {self.ledger_id} was changed by another client while closing")
            self._metadata = fresh.metadata
            self._versioned = fresh
