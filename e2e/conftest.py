"""A fresh local cluster per test (the tests kill its processes): etcd, 1 broker and 4 bookies
for ensembles of 3 (WQ=2, AQ=2). The fourth bookie is the spare an ensemble change needs:
with only 3 bookies a dead one has no replacement, and entries whose write set includes it
cannot reach their ack quorum (BookKeeper behaves the same)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pulsar_broker import local_cluster


@pytest.fixture
def cluster(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    running = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=4, brokers=1, ensemble=3, write_quorum=2, ack_quorum=2,
        journal_sync=False)
    running.start()
    yield running
    running.stop()
