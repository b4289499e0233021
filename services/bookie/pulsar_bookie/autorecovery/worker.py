"""The replication worker: claims under-replicated ledgers and re-replicates them.

A worker lists the marks, claims one with an ephemeral lock key (a worker
that dies loses its claims with its session), and for each closed fragment
with a copy on a bad bookie (named in the mark and still unregistered, or
registered again but missing entries it should hold, or being decommissioned):
chooses a replacement with the placement policy, copies the entries, reads
them back, and swaps the bookie in that fragment's ensemble with a CAS on
the ledger metadata (re-planned from fresh metadata on a conflict). When no
fragment refers to a bad bookie any more the mark is removed, unless someone
re-marked the ledger meanwhile.

A mark for a placement violation (set by the auditor's periodic bookie check)
also moves bookies of closed fragments that share a rack to racks the
fragment does not use, when the placement policy finds a bookie there.

The last fragment of a ledger still open for writing belongs to its writer,
which moves off a failed or read-only bookie by itself (ensemble change). If
the mark is older than openLedgerRereplicationGracePeriod and the fragment
is still affected, the worker recovers the ledger first (fences it and closes
it, as a reader taking it over would) and then re-replicates it closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import random

from pulsar_common import clock
from pulsar_common import errors as common_errors
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import errors as metadata_errors
from pulsar_common.metadata import tasks as metadata_tasks

from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import checker, copier, plan, underreplication
from pulsar_bookie.client import bookie_rpc, ledger_metadata
from pulsar_bookie.client.replicated import placement
from pulsar_bookie.client.replicated import recovery as ledger_recovery
from pulsar_bookie.client.replicated.settings import ClientSettings
from pulsar_bookie.service import registration

log = logging.getLogger(__name__)

#: Repairs of one ledger in one claim, at most (each swaps one bookie of one fragment).
REPAIRS_PER_CLAIM_MAX = 10_000
#: How often an idle worker looks at the marks even without a notification.
IDLE_POLL_S = 1.0
#: Pause after a round in which some ledger could not be finished (nothing to copy to,
#: replicas unreachable), so that a stuck ledger is not retried in a busy loop.
RETRY_BACKOFF_S = 1.0


@dataclasses.dataclass(frozen=True)
class WorkerSettings:
    entry_batch: int = 64
    #: Claimed ledgers re-replicated at once by one worker.
    ledgers_in_flight: int = 4
    open_ledger_grace_ms: int = 30_000
    timeout_s: float = 30.0


@dataclasses.dataclass
class WorkerStats:
    """What this worker did since it started (for metrics, the admin API and the bench)."""

    ledgers_replicated: int = 0
    fragments_replicated: int = 0
    entries_copied: int = 0
    bytes_copied: int = 0
    failures: int = 0


class ReplicationWorker:
    def __init__(
        self,
        store: metadata_api.MetadataStore,
        pool: bookie_rpc.BookieRpcPool,
        owner: str,
        settings: WorkerSettings | None = None,
        *,
        rng: random.Random | None = None,
        now_ms: clock.NowMs = clock.wall_clock_ms,
    ) -> None:
        self._store = store
        self._marks = underreplication.UnderReplicationStore(store)
        self._meta = ledger_metadata.LedgerMetadataStore(store)
        self._pool = pool
        self._owner = owner
        self._settings = settings or WorkerSettings()
        self._rng = rng or random.Random()
        self._now_ms = now_ms
        self.stats = WorkerStats()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run(), name="replication-worker")

    async def stop(self) -> None:
        if self._task is not None:
            await metadata_tasks.cancel_and_wait(self._task)
            self._task = None

    async def run(self) -> None:
        watcher = asyncio.get_running_loop().create_task(self._watch_marks())
        try:
            while True:
                try:
                    finished_all = await self.run_once()
                except Exception as exc:  # the daemon outlives any one failure
                    log.warning("replication round failed: %s", exc, exc_info=not isinstance(
                        exc, errors.BookieError | metadata_errors.MetadataStoreError))
                    finished_all = False
                if not finished_all:
                    await asyncio.sleep(RETRY_BACKOFF_S)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), IDLE_POLL_S)
                self._wake.clear()
        finally:
            await metadata_tasks.cancel_and_wait(watcher)

    async def _watch_marks(self) -> None:
        while True:
            watch = self._marks.watch_marks()
            try:
                async for _ in watch:
                    self._wake.set()
            except metadata_errors.MetadataStoreError:
                pass
            finally:
                await watch.close()
            await asyncio.sleep(IDLE_POLL_S)

    async def run_once(self) -> bool:
        """One pass over the marks, up to ledgers_in_flight claimed ledgers at a time; True
        when every mark seen was finished (or claimed by another worker)."""
        room = asyncio.Semaphore(self._settings.ledgers_in_flight)

        async def one(ledger_id: types.LedgerId) -> bool:
            async with room:
                return await self._claim_and_replicate(ledger_id)

        results = await asyncio.gather(*(one(ledger_id)
                                         for ledger_id in await self._marks.ledger_ids()))
        return all(results)

    async def _claim_and_replicate(self, ledger_id: types.LedgerId) -> bool:
        if not await self._marks.try_lock(ledger_id, self._owner):
            return True
        try:
            return await self.replicate(ledger_id)
        except (errors.BookieError, TimeoutError, OSError) as exc:
            self.stats.failures += 1
            # A bookie or the store out of reach is expected while the cluster heals;
            # anything else (a refused key, a corrupt entry) needs an operator's eye.
            level = logging.INFO if common_errors.is_retriable(exc) else logging.WARNING
            log.log(level, "ledger %s: re-replication failed, will retry: %s", ledger_id, exc)
            return False
        finally:
            await self._marks.unlock(ledger_id)

    async def replicate(self, ledger_id: types.LedgerId) -> bool:
        """Fix one claimed ledger; True when its mark could be removed."""
        mark = await self._marks.get(ledger_id)
        if mark is None:
            return True
        try:
            versioned = await self._meta.read(ledger_id)
        except errors.NoSuchLedgerError:
            await self._marks.remove_unconditionally(ledger_id)
            return True
        draining = await self._marks.decommissioning()
        bad = await self._still_bad(mark, versioned, draining)
        for _ in range(REPAIRS_PER_CLAIM_MAX):
            repair_plan = plan.repairs_for(versioned.metadata, bad)
            if repair_plan.open_fragment_affected and not repair_plan.repairs:
                if self._now_ms() - mark.ctime_ms < self._settings.open_ledger_grace_ms:
                    return False  # the writer's turn; the mark stays
                versioned = await self._recover_open_ledger(versioned)
                continue
            if not repair_plan.repairs:
                break
            repair = repair_plan.repairs[0]
            candidates = await registration.RegisteredBookieSource(self._store).bookies()
            target = plan.replacement_for(candidates, repair.fragment.ensemble, repair.bad,
                                          bad | draining, self._rng)
            versioned = await self._repair(versioned, repair, bad | draining, target)
        if plan.bookies_of(versioned.metadata) & bad:
            return False
        if mark.placement_violation:
            await self._fix_placement(versioned, bad | draining)
        if await self._marks.remove(mark):
            self.stats.ledgers_replicated += 1
            log.info("ledger %s fully replicated again (was on %s)", ledger_id,
                     sorted(mark.missing_replicas))
            return True
        return False  # re-marked meanwhile: the next round looks again

    async def _still_bad(self, mark: underreplication.Mark,
                         versioned: ledger_metadata.VersionedMetadata,
                         draining: frozenset[types.BookieId]) -> frozenset[types.BookieId]:
        """The bookies of the ledger to replace now: those of the mark that are still not
        registered, those registered again that lack entries they should hold (a bookie
        whose session only flapped is kept), and those being decommissioned."""
        metadata = versioned.metadata
        registered = {b.bookie_id for b in await registration.list_bookies(self._store)}
        back = mark.missing_replicas & registered
        lacking = (await checker.bookies_missing_entries(self._pool, metadata,
                                                         self._settings.timeout_s)
                   if back else frozenset())
        return frozenset((mark.missing_replicas - registered) | (back & lacking)
                         | (draining & plan.bookies_of(metadata)))

    async def _recover_open_ledger(
        self, versioned: ledger_metadata.VersionedMetadata
    ) -> ledger_metadata.VersionedMetadata:
        log.info("ledger %s: open past openLedgerRereplicationGracePeriod with a lost bookie "
                 "in its last fragment: fencing and closing it", versioned.metadata.ledger_id)
        timeout_ms = int(self._settings.timeout_s * 1000)
        settings = ClientSettings(add_entry_timeout_ms=timeout_ms,
                                  read_entry_timeout_ms=timeout_ms)
        return await ledger_recovery.recover(
            versioned, self._meta, self._pool, settings,
            registration.RegisteredBookieSource(self._store), self._rng)

    async def _fix_placement(self, versioned: ledger_metadata.VersionedMetadata,
                             avoid: frozenset[types.BookieId]) -> None:
        """Move bookies of closed fragments crowded in one rack to racks the fragment does
        not use, while the placement policy finds such a bookie."""
        for _ in range(REPAIRS_PER_CLAIM_MAX):
            bookies = await registration.list_bookies(self._store)
            racks = {b.bookie_id: b.rack for b in bookies}
            available = len({b.rack for b in bookies if b.writable and b.bookie_id not in avoid})
            repairs = plan.placement_repairs(versioned.metadata, racks, available)
            if not repairs:
                return
            repair = repairs[0]
            candidates = [placement.BookieInfo(b.bookie_id, b.rack, b.writable) for b in bookies]
            target = plan.replacement_for(candidates, repair.fragment.ensemble, repair.bad,
                                          avoid, self._rng)
            kept = {racks.get(b, "") for b in repair.fragment.ensemble if b != repair.bad}
            if racks.get(target, "") in kept:
                return  # no better rack has room now; the next periodic check looks again
            versioned = await self._repair(versioned, repair, avoid, target)

    async def _repair(
        self,
        versioned: ledger_metadata.VersionedMetadata,
        repair: plan.Repair,
        avoid: frozenset[types.BookieId],
        target: types.BookieId,
    ) -> ledger_metadata.VersionedMetadata:
        metadata = versioned.metadata
        # Bookies still registered (decommissioning ones, crowded ones) are read from too: a
        # ledger with one copy per entry can only be drained from the bookie that holds it.
        registered = {b.bookie_id for b in await registration.list_bookies(self._store)}
        copied = await copier.copy_fragment(
            self._pool, metadata, repair, target, avoid - registered,
            batch=self._settings.entry_batch, timeout_s=self._settings.timeout_s)
        while True:
            updated = plan.swapped(versioned.metadata, repair, target)
            if updated is None:
                # The fragment changed under us (ledger closed by its writer, or another
                # actor moved it): plan again from the fresh metadata.
                return versioned
            try:
                versioned = await self._meta.write(updated, versioned.version)
            except errors.MetadataVersionError:
                versioned = await self._meta.read(metadata.ledger_id)
                continue
            self.stats.fragments_replicated += 1
            self.stats.entries_copied += copied.entries
            self.stats.bytes_copied += copied.bytes
            log.info("ledger %s: fragment from entry %s moved from %s to %s (%d entries)",
                     metadata.ledger_id, repair.fragment.first, repair.bad, target,
                     copied.entries)
            return versioned
