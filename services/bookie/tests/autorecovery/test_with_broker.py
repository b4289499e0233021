"""Autorecovery under a real broker and the official client: after a bookie is lost for good
and re-replicated, losing a second bookie still loses no acknowledged message."""

from __future__ import annotations

import asyncio
import pathlib
import shutil
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_bookie.client import ledger_metadata
from pulsar_bookie.service import testing
from pulsar_broker import local_cluster
from pulsar_broker.testing import read_topic
from pulsar_common.metadata import factory

from .conftest import eventually, references
from .test_recovery import RECOVERY, no_marks

pytestmark = pytest.mark.slow
TOPIC = "persistent://public/default/autorecovery"


@pytest.fixture
def cluster(tmp_path: pathlib.Path) -> Iterator[local_cluster.LocalCluster]:
    running = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=4, brokers=1, ensemble=3, write_quorum=2, ack_quorum=2,
        journal_sync=False)
    running.start()
    recovery = testing.AutoRecoveryProcess(tmp_path / "autorecovery",
                                           metadata_url=running.metadata_url,
                                           overrides=RECOVERY)
    try:
        recovery.start()
        yield running
    finally:
        recovery.kill()
        running.stop()


def publish(client: pulsar.Client, first: int, count: int) -> None:
    producer = client.create_producer(TOPIC, batching_enabled=False, send_timeout_millis=60_000,
                                      block_if_queue_full=True)
    failures: list[str] = []
    for i in range(first, first + count):
        producer.send_async(b"message-%06d" % i,
                            lambda res, _mid: failures.append(str(res))
                            if res != pulsar.Result.Ok else None)
    producer.flush()
    producer.close()
    assert not failures, failures[:5]


async def first_ensemble(metadata_url: str) -> tuple[str, ...]:
    """The bookies of the topic's first fragment: two of them share a third of its entries."""
    store = await factory.create_store(metadata_url)
    try:
        meta = ledger_metadata.LedgerMetadataStore(store)
        first = min(await meta.ledger_ids())
        return (await meta.read(first)).metadata.ensembles[0].ensemble
    finally:
        await store.close()


async def wait_recovered(metadata_url: str, victim: str) -> None:
    store = await factory.create_store(metadata_url)
    try:
        async def gone() -> bool:
            return not await references(store, victim)

        await eventually(gone, 90, f"no ledger on {victim}")
        await eventually(lambda: no_marks(store), 30, "no under-replicated ledger left")
    finally:
        await store.close()


def test_after_re_replication_a_second_bookie_loss_loses_no_acknowledged_message(
    cluster: local_cluster.LocalCluster,
) -> None:
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=60)
    try:
        publish(client, 0, 2000)
        ensemble = asyncio.run(first_ensemble(cluster.metadata_url))
        first, second = (next(b for b in cluster.bookies if b.bookie_id == bookie)
                         for bookie in ensemble[:2])
        first.kill()
        shutil.rmtree(first.data_dir / "journal")
        shutil.rmtree(first.data_dir / "ledgers")
        publish(client, 2000, 1000)  # the broker's writer moves off the dead bookie
        asyncio.run(wait_recovered(cluster.metadata_url, first.bookie_id))
    finally:
        client.close()
    # Every entry is on two live bookies again: one more loss still leaves a copy of each.
    # A fresh bookie keeps three writable for the broker's recovery of its open ledger, and
    # the broker restarts so that nothing is served from its entry cache.
    spare = testing.BookieProcess(cluster.data_dir / "bookie-spare",
                                  metadata_url=cluster.metadata_url, sync=False).start()
    try:
        second.kill()
        broker = cluster.brokers[0]
        broker.kill()
        broker.start()
        stored = read_topic(cluster.service_url, TOPIC, timeout_ms=60_000)
    finally:
        spare.kill()
    assert stored == [b"message-%06d" % i for i in range(3000)]
