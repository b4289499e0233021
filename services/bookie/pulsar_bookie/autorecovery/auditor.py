"""The auditor: one per cluster, elected through the metadata store.

While it leads it audits (plan.audit) whenever a bookie registration,
lostBookieRecoveryDelay or a decommissioning record changes, when a bookie
seen missing becomes due, and every auditorPeriodicBookieCheckInterval (that
periodic check, and the first one of a new auditor, also marks ledgers whose
closed fragments share racks while other racks have writable bookies); a
rewrite of lostBookieRecoveryDelay (trigger_audit) audits at once, without
waiting for the delay, while a new value counts from its write for the bookies
already missing (as BookKeeper's auditor reschedules). Every
auditorPeriodicCheckInterval it also runs the
replica check (checker.py). The bookies it has seen missing, and since when,
live only in the leader: a new auditor starts their clocks again, which
errs on the side of waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging

from pulsar_common import clock
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import errors as metadata_errors
from pulsar_common.metadata import tasks as metadata_tasks

from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import checker, plan, underreplication
from pulsar_bookie.client import api, bookie_rpc, ledger_metadata
from pulsar_bookie.service import registration

log = logging.getLogger(__name__)

#: How often a leading auditor looks at its leadership and due times without an event.
TICK_S = 0.5


@dataclasses.dataclass(frozen=True)
class AuditorSettings:
    lost_bookie_recovery_delay_s: int = 0
    periodic_check_interval_s: int = 604800
    periodic_bookie_check_interval_s: int = 86400
    timeout_s: float = 30.0


def _on_delay_change(
    seen: tuple[int, int], fresh: tuple[int, int],
    missing_since: dict[types.BookieId, int], now_ms: int,
) -> tuple[bool, dict[types.BookieId, int]]:
    """BookKeeper's reaction to a write of lostBookieRecoveryDelay: the same value again (what
    trigger_audit writes) or 0 audits now, every missing bookie due; a new value counts from
    now for the bookies already missing; a notification without a new write changes nothing.
    Returns (audit now, missing-since clocks)."""
    (seen_delay, seen_version), (delay, version) = seen, fresh
    if version == seen_version:
        return False, missing_since
    if delay == seen_delay or delay == 0:
        return True, missing_since
    return False, {bookie: now_ms for bookie in missing_since}


def identity(bookie_id: str, http_address: str) -> bytes:
    """What the auditor publishes in its election key (read by who_is_auditor)."""
    return json.dumps({"bookieId": bookie_id, "httpAddress": http_address},
                      sort_keys=True).encode()


class Auditor:
    def __init__(
        self,
        store: metadata_api.MetadataStore,
        pool: bookie_rpc.BookieRpcPool,
        me: bytes,
        settings: AuditorSettings | None = None,
        *,
        now_ms: clock.NowMs = clock.wall_clock_ms,
    ) -> None:
        self._store = store
        self._pool = pool
        self._me = me
        self._settings = settings or AuditorSettings()
        self._now_ms = now_ms
        self._marks = underreplication.UnderReplicationStore(store)
        self._meta = ledger_metadata.LedgerMetadataStore(store)
        self._election = store.leader_election(underreplication.AUDITOR_ELECTION_PATH)
        self._wake = asyncio.Event()
        self._delay_touched = False
        self._task: asyncio.Task[None] | None = None
        self.audits = 0
        self.ledgers_marked = 0

    @property
    def is_leader(self) -> bool:
        return self._election.is_leader

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self.run(), name="auditor")

    async def stop(self) -> None:
        if self._task is not None:
            await metadata_tasks.cancel_and_wait(self._task)
            self._task = None
        with contextlib.suppress(metadata_errors.MetadataStoreError):
            await self._election.release()

    async def run(self) -> None:
        while True:
            try:
                await self._election.acquire(self._me)
                log.info("this process is the auditor")
                await self._lead()
            except Exception as exc:  # the daemon outlives any one failure
                log.warning("auditor: %s; competing for the election again", exc,
                            exc_info=not isinstance(
                                exc, errors.BookieError | metadata_errors.MetadataStoreError))
                with contextlib.suppress(metadata_errors.MetadataStoreError):
                    await self._election.release()
                await asyncio.sleep(TICK_S)

    async def _lead(self) -> None:
        loop = asyncio.get_running_loop()
        watchers = [
            loop.create_task(self._watch(registration.AVAILABLE_PATH, prefix=True)),
            loop.create_task(self._watch(underreplication.DECOMMISSIONING_PATH, prefix=True)),
            loop.create_task(self._watch(underreplication.LOST_BOOKIE_RECOVERY_DELAY_PATH,
                                         prefix=False, delay=True)),
        ]
        delay_seen = await self._marks.lost_bookie_recovery_delay_record(
            self._settings.lost_bookie_recovery_delay_s)
        missing_since: dict[types.BookieId, int] = {}
        now = self._now_ms()
        next_bookie_check = now
        next_entry_check = now + self._settings.periodic_check_interval_s * 1000
        next_due: int | None = None
        try:
            while self._election.is_leader:
                now = self._now_ms()
                due = (self._wake.is_set() or now >= next_bookie_check
                       or (next_due is not None and now >= next_due))
                if due:
                    force = False
                    if self._delay_touched:
                        self._delay_touched = False
                        fresh = await self._marks.lost_bookie_recovery_delay_record(
                            self._settings.lost_bookie_recovery_delay_s)
                        force, missing_since = _on_delay_change(delay_seen, fresh,
                                                                missing_since, now)
                        delay_seen = fresh
                    self._wake.clear()
                    result = await self.audit(missing_since, force=force,
                                              check_placement=now >= next_bookie_check)
                    missing_since = dict(result.missing_since_ms)
                    next_due = result.next_due_ms
                    if self._settings.periodic_bookie_check_interval_s > 0:
                        next_bookie_check = (
                            now + self._settings.periodic_bookie_check_interval_s * 1000)
                    else:
                        next_bookie_check = 2**62
                if self._settings.periodic_check_interval_s > 0 and now >= next_entry_check:
                    await self.check_replicas()
                    next_entry_check = now + self._settings.periodic_check_interval_s * 1000
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), TICK_S)
        finally:
            for watcher in watchers:
                await metadata_tasks.cancel_and_wait(watcher)

    async def _watch(self, path: str, *, prefix: bool, delay: bool = False) -> None:
        while True:
            watch = self._store.watch(path, prefix=prefix)
            try:
                async for _ in watch:
                    self._delay_touched = self._delay_touched or delay
                    self._wake.set()
            except metadata_errors.MetadataStoreError:
                pass
            finally:
                await watch.close()
            await asyncio.sleep(TICK_S)

    async def _ledgers(self) -> list[api.LedgerMetadata]:
        found = []
        for ledger_id in await self._meta.ledger_ids():
            try:
                found.append((await self._meta.read(ledger_id)).metadata)
            except errors.NoSuchLedgerError:
                continue
        return found

    async def audit(self, missing_since: dict[types.BookieId, int], *,
                    force: bool = False, check_placement: bool = False) -> plan.Audit:
        """One bookie check: mark the ledgers of bookies lost for long enough; with
        check_placement also those with fragments crowded in fewer racks than available."""
        delay_s = await self._marks.lost_bookie_recovery_delay_s(
            self._settings.lost_bookie_recovery_delay_s)
        bookies = await registration.list_bookies(self._store)
        registered = {b.bookie_id for b in bookies}
        draining = await self._marks.decommissioning()
        ledgers = await self._ledgers()
        result = plan.audit(ledgers, registered, draining, missing_since, self._now_ms(),
                            delay_s * 1000, force=force)
        self.audits += 1
        for ledger_id, lost in result.marks.items():
            if await self._marks.mark(ledger_id, lost, self._now_ms()):
                self.ledgers_marked += 1
                log.info("ledger %s marked under-replicated (bookies %s)", ledger_id,
                         sorted(lost))
        known = {metadata.ledger_id for metadata in ledgers}
        for ledger_id in await self._marks.ledger_ids():
            if ledger_id not in known and not await self._meta_exists(ledger_id):
                await self._marks.remove_unconditionally(ledger_id)  # the ledger was deleted
        if check_placement:
            racks = {b.bookie_id: b.rack for b in bookies}
            available = len({b.rack for b in bookies
                             if b.writable and b.bookie_id not in draining})
            for metadata in ledgers:
                if plan.placement_repairs(metadata, racks, available) and await self._marks.mark(
                        metadata.ledger_id, (), self._now_ms(), placement_violation=True):
                    self.ledgers_marked += 1
                    log.info("ledger %s marked: fragments crowded in too few racks",
                             metadata.ledger_id)
        return result

    async def _meta_exists(self, ledger_id: int) -> bool:
        try:
            await self._meta.read(ledger_id)
            return True
        except errors.NoSuchLedgerError:
            return False

    async def check_replicas(self) -> int:
        """The periodic replica check; the number of ledgers it marked."""
        marked = 0
        for metadata in await self._ledgers():
            lacking = await checker.bookies_missing_entries(self._pool, metadata,
                                                            self._settings.timeout_s)
            if lacking and await self._marks.mark(metadata.ledger_id, lacking, self._now_ms()):
                marked += 1
                log.warning("ledger %s: bookies %s lack entries they should hold; marked",
                            metadata.ledger_id, sorted(lacking))
        self.ledgers_marked += marked
        return marked
