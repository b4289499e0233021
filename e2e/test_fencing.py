"""Two writers race on one ledger over real bookie processes: the old owner keeps writing
while a new one recovers. Afterwards the old writer can never get an add acknowledged,
and the closed ledger holds every entry either was told was acknowledged."""

from __future__ import annotations

import asyncio

import pytest
from pulsar_bookie import errors
from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.net import client as bookie_net
from pulsar_broker import cluster_broker, local_cluster
from pulsar_common.metadata import factory


@pytest.fixture
def bookies_only(tmp_path):
    cluster = local_cluster.LocalCluster(tmp_path / "cluster", bookies=3, brokers=0,
                                         ensemble=3, write_quorum=2, ack_quorum=2,
                                         journal_sync=False)
    cluster.start()
    yield cluster
    cluster.stop()


#: How long the writers get to have entries acknowledged before the race (a loaded machine).
ACKNOWLEDGED_TIMEOUT_S = 60.0


async def wait_for_acknowledged(acknowledged: set[int], count: int,
                                writing: list[asyncio.Future[None]],
                                refused: list[BaseException]) -> None:
    """Until count adds are acknowledged; fails at the deadline, or at once when every writer
    stopped (a writer crashed, or the adds were refused before any fencing)."""
    deadline = asyncio.get_running_loop().time() + ACKNOWLEDGED_TIMEOUT_S
    while len(acknowledged) < count:
        if all(w.done() for w in writing):
            await asyncio.gather(*writing)  # raises a writer's unexpected error, if any
            raise AssertionError(f"writers stopped after {len(acknowledged)} acknowledged adds "
                                 f"of {count}; refused: {refused[:3]}")
        assert asyncio.get_running_loop().time() < deadline, (
            f"only {len(acknowledged)} of {count} adds acknowledged after "
            f"{ACKNOWLEDGED_TIMEOUT_S}s; refused: {refused[:3]}")
        await asyncio.sleep(0.01)


async def race(metadata_url: str) -> None:
    store_a = await factory.create_store(metadata_url)
    store_b = await factory.create_store(metadata_url)
    pool_a, pool_b = bookie_net.BookieClientPool(), bookie_net.BookieClientPool()
    old = replicated.ReplicatedLedgerClient(store_a, pool_a, cluster_broker.RegisteredBookies(store_a))
    new = replicated.ReplicatedLedgerClient(store_b, pool_b, cluster_broker.RegisteredBookies(store_b))
    writer = await old.create_ledger(3, 2, 2, password=b"secret")
    acknowledged: set[int] = set()
    refused: list[BaseException] = []
    recovered = asyncio.Event()
    acked_after_recovery: list[int] = []

    async def keep_writing() -> None:
        i = 0
        while len(refused) < 20:
            i += 1
            started_after_recovery = recovered.is_set()
            try:
                entry_id = await writer.append(b"entry %d" % i)
            except errors.BookieError as exc:
                refused.append(exc)
                continue
            acknowledged.add(entry_id)
            if started_after_recovery:
                acked_after_recovery.append(entry_id)

    writing = [asyncio.ensure_future(keep_writing()) for _ in range(4)]
    await wait_for_acknowledged(acknowledged, 200, writing, refused)
    handle = await new.open_ledger(writer.ledger_id, recovery=True, password=b"secret")
    recovered.set()
    await asyncio.wait_for(asyncio.gather(*writing), 60)

    metadata = await new.get_ledger_metadata(writer.ledger_id)
    assert metadata.is_closed
    assert not acked_after_recovery, "an add started after recovery was acknowledged"
    assert all(isinstance(e, errors.LedgerFencedError) for e in refused[-5:])
    assert max(acknowledged) <= metadata.last_entry_id
    entries = await handle.read(0, metadata.last_entry_id)
    assert acknowledged <= {e.entry_id for e in entries}
    with pytest.raises(errors.BookieError):
        await writer.append(b"one more")
    for pool in (pool_a, pool_b):
        await pool.close()
    for store in (store_a, store_b):
        await store.close()


def test_old_writer_is_fenced_and_nothing_acknowledged_is_lost(bookies_only):
    asyncio.run(race(bookies_only.metadata_url))
