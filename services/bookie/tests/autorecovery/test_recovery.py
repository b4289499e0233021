"""Autorecovery on real processes: a lost bookie's fragments come back to WQ copies, an open
ledger keeps being written meanwhile, the auditor fails over, and a worker killed mid-copy
leaves nothing inconsistent."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from pulsar_bookie import errors
from pulsar_bookie.autorecovery import underreplication
from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.net import client as bookie_net
from pulsar_common.metadata import api as metadata_api

from .conftest import (
    Cluster,
    assert_fully_replicated,
    eventually,
    payload,
    references,
    write_closed_ledgers,
)

pytestmark = pytest.mark.slow
log = logging.getLogger(__name__)

#: Replicate at once and leave open ledgers to their writers for the whole test.
RECOVERY = {"lostBookieRecoveryDelay": "0", "openLedgerRereplicationGracePeriod": "600000"}


async def no_marks(store: metadata_api.MetadataStore) -> bool:
    return not await underreplication.UnderReplicationStore(store).ledger_ids()


async def test_lost_bookie_is_re_replicated_while_an_open_ledger_keeps_being_written(
    cluster: Cluster, store: metadata_api.MetadataStore, pool: bookie_net.BookieClientPool,
    ledgers: replicated.ReplicatedLedgerClient,
) -> None:
    await asyncio.to_thread(cluster.start_bookies, 4)
    await asyncio.to_thread(cluster.start_autorecovery, RECOVERY)
    await write_closed_ledgers(ledgers, count=8, entries=150)

    writer = await ledgers.create_ledger(3, 2, 2)
    written: list[int] = []
    stop = asyncio.Event()

    async def keep_writing() -> None:
        entry = 0
        while not stop.is_set():
            assert await writer.append(payload(writer.ledger_id, entry)) == entry
            written.append(entry)
            entry += 1
            await asyncio.sleep(0.005)

    writing = asyncio.ensure_future(keep_writing())
    async def wrote_more_than(count: int) -> bool:
        return len(written) > count

    await eventually(lambda: wrote_more_than(50), 30, "the writer is going")
    victim = writer.ensemble[0]
    live = {b.bookie_id for b in cluster.bookies} - {victim}
    lost_at = time.monotonic()
    cluster.lose(victim)

    await eventually(lambda: _gone(store, victim), 60, f"no ledger on {victim}")
    await eventually(lambda: no_marks(store), 30, "no under-replicated ledger left")
    elapsed = time.monotonic() - lost_at
    log.info("lost bookie re-replicated in %.1fs", elapsed)
    print(f"\nlost bookie fully re-replicated {elapsed:.1f}s after SIGKILL")

    before = len(written)
    await eventually(lambda: wrote_more_than(before + 20), 30,
                     "the writer goes on after recovery")
    stop.set()
    await writing
    await writer.close()  # seals on top of the swaps autorecovery made to earlier fragments
    metadata = await ledgers.get_ledger_metadata(writer.ledger_id)
    assert metadata.is_closed and metadata.last_entry_id == written[-1]
    assert await assert_fully_replicated(store, pool, live) > 8 * 150


async def _gone(store: metadata_api.MetadataStore, bookie: str) -> bool:
    return not await references(store, bookie)


async def test_auditor_fails_over_and_the_new_one_recovers_a_lost_bookie(
    cluster: Cluster, store: metadata_api.MetadataStore, pool: bookie_net.BookieClientPool,
    ledgers: replicated.ReplicatedLedgerClient,
) -> None:
    await asyncio.to_thread(cluster.start_bookies, 4)
    first = await asyncio.to_thread(cluster.start_autorecovery, RECOVERY)
    second = await asyncio.to_thread(cluster.start_autorecovery, RECOVERY)
    written = await write_closed_ledgers(ledgers, count=4, entries=100)

    def auditor_http() -> str:
        alive = first if first.process is not None and first.process.poll() is None else second
        status, body = cluster.http_json(alive, "GET", "/api/v1/autorecovery/who_is_auditor")
        return str(body["httpAddress"]) if status == 200 and isinstance(body, dict) else ""

    async def elected() -> bool:
        return await asyncio.to_thread(auditor_http) != ""

    await eventually(elected, 30, "an auditor is elected")
    leader = first if await asyncio.to_thread(auditor_http) == first.http_url else second
    other = second if leader is first else first
    leader.kill()

    async def taken_over() -> bool:
        return bool(await asyncio.to_thread(auditor_http) == other.http_url)

    await eventually(taken_over, 30, "the other process becomes auditor")

    [ledger_id, *_] = written
    victim_id = (await ledgers.get_ledger_metadata(ledger_id)).ensembles[0].ensemble[0]
    cluster.lose(victim_id)
    await eventually(lambda: _gone(store, victim_id), 60, f"no ledger on {victim_id}")
    await eventually(lambda: no_marks(store), 30, "no under-replicated ledger left")
    live = {b.bookie_id for b in cluster.bookies} - {victim_id}
    assert await assert_fully_replicated(store, pool, live) >= 4 * 100


async def test_a_worker_killed_mid_copy_leaves_consistent_metadata_and_another_finishes(
    cluster: Cluster, store: metadata_api.MetadataStore, pool: bookie_net.BookieClientPool,
    ledgers: replicated.ReplicatedLedgerClient,
) -> None:
    await asyncio.to_thread(cluster.start_bookies, 4)
    [ledger_id] = await write_closed_ledgers(ledgers, count=1, entries=3000, size=2048)
    victim = (await ledgers.get_ledger_metadata(ledger_id)).ensembles[0].ensemble[1]
    # One entry at a time: the copy of ~2000 entries takes long enough to be interrupted.
    slow = await asyncio.to_thread(cluster.start_autorecovery,
                                   {**RECOVERY, "rereplicationEntryBatchSize": "1"})
    cluster.lose(victim)
    marks = underreplication.UnderReplicationStore(store)
    await eventually(lambda: _is_locked(marks, ledger_id), 30, "a worker claims the ledger")
    slow.kill()  # inside the copy: ~2000 sequential round trips before the swap

    metadata = await ledgers.get_ledger_metadata(ledger_id)
    assert metadata.is_closed and metadata.last_entry_id == 2999
    assert victim in metadata.ensembles[0].ensemble, "killed before its swap"
    for fragment in metadata.ensembles:
        assert len(set(fragment.ensemble)) == 3
    assert await marks.get(ledger_id) is not None, "the mark survives the dead worker"

    await asyncio.to_thread(cluster.start_autorecovery, RECOVERY)
    await eventually(lambda: _gone(store, victim), 60, f"no ledger on {victim}")
    await eventually(lambda: no_marks(store), 30, "no under-replicated ledger left")
    live = {b.bookie_id for b in cluster.bookies} - {victim}
    assert await assert_fully_replicated(store, pool, live) == 3000 * 2


async def _is_locked(marks: underreplication.UnderReplicationStore, ledger_id: int) -> bool:
    return await marks.lock_owner(ledger_id) is not None


async def test_an_idle_open_ledger_past_the_grace_period_is_fenced_closed_and_replicated(
    cluster: Cluster, store: metadata_api.MetadataStore, pool: bookie_net.BookieClientPool,
    ledgers: replicated.ReplicatedLedgerClient,
) -> None:
    await asyncio.to_thread(cluster.start_bookies, 4)
    writer = await ledgers.create_ledger(3, 2, 2)
    for entry in range(100):
        await writer.append(payload(writer.ledger_id, entry))
    victim = writer.ensemble[1]
    await asyncio.to_thread(cluster.start_autorecovery,
                            {**RECOVERY, "openLedgerRereplicationGracePeriod": "0"})
    cluster.lose(victim)

    await eventually(lambda: _gone(store, victim), 60, f"no ledger on {victim}")
    await eventually(lambda: no_marks(store), 30, "no under-replicated ledger left")
    metadata = await ledgers.get_ledger_metadata(writer.ledger_id)
    assert metadata.is_closed and metadata.last_entry_id == 99, metadata
    live = {b.bookie_id for b in cluster.bookies} - {victim}
    assert await assert_fully_replicated(store, pool, live) == 100 * 2
    with pytest.raises(errors.BookieError):
        await writer.append(payload(writer.ledger_id, 100))  # fenced: the writer is told


async def test_marks_of_a_bookie_back_with_its_data_or_of_deleted_ledgers_are_dropped(
    cluster: Cluster, store: metadata_api.MetadataStore,
    ledgers: replicated.ReplicatedLedgerClient,
) -> None:
    await asyncio.to_thread(cluster.start_bookies, 4)
    [ledger_id] = await write_closed_ledgers(ledgers, count=1, entries=50)
    before = await ledgers.get_ledger_metadata(ledger_id)
    # As the auditor leaves it when a bookie's session flapped: marked, yet back with its data.
    marks = underreplication.UnderReplicationStore(store)
    await marks.mark(ledger_id, [before.ensembles[0].ensemble[0]], now_ms=0)
    await marks.mark(ledger_id + 1000, [before.ensembles[0].ensemble[0]], now_ms=0)  # deleted
    await asyncio.to_thread(cluster.start_autorecovery, {"lostBookieRecoveryDelay": "3600"})
    await eventually(lambda: no_marks(store), 30, "the mark is dropped")
    assert await ledgers.get_ledger_metadata(ledger_id) == before


async def test_fragments_crowded_in_one_rack_move_to_a_rack_that_has_room(
    cluster: Cluster, store: metadata_api.MetadataStore, pool: bookie_net.BookieClientPool,
    ledgers: replicated.ReplicatedLedgerClient,
) -> None:
    for rack in ("/r1", "/r1", "/r2"):
        await asyncio.to_thread(cluster.start_bookies, 1, {"rack": rack})
    [ledger_id] = await write_closed_ledgers(ledgers, count=1, entries=100)
    crowded = (await ledgers.get_ledger_metadata(ledger_id)).ensembles[0].ensemble
    assert len(crowded) == 3  # every bookie: two of them share /r1
    await asyncio.to_thread(cluster.start_bookies, 1, {"rack": "/r3"})
    roomy = cluster.bookies[-1].bookie_id
    await asyncio.to_thread(cluster.start_autorecovery,
                            {**RECOVERY, "auditorPeriodicBookieCheckInterval": "1"})

    async def spread() -> bool:
        metadata = await ledgers.get_ledger_metadata(ledger_id)
        return roomy in metadata.ensembles[0].ensemble

    await eventually(spread, 60, "the ledger's fragment uses /r3")
    await eventually(lambda: no_marks(store), 30, "no under-replicated ledger left")
    after = (await ledgers.get_ledger_metadata(ledger_id)).ensembles[0].ensemble
    assert len(set(after) & set(crowded)) == 2
    live = {b.bookie_id for b in cluster.bookies}
    assert await assert_fully_replicated(store, pool, live) == 100 * 2
