"""A fresh local cluster per test (the tests kill its processes): etcd, 1 broker and 4 bookies
for ensembles of 3 (WQ=2, AQ=2). The fourth bookie is the spare an ensemble change needs:
with only 3 bookies a dead one has no replacement, and entries whose write set includes it
cannot reach their ack quorum (BookKeeper behaves the same).

The repository's root is made importable, however pytest was started, for the helpers the
tests share (`from e2e import operator_live`)."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Iterator

import pytest
from pulsar_broker import local_cluster

ROOT = pathlib.Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture
def cluster(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    running = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=4, brokers=1, ensemble=3, write_quorum=2, ack_quorum=2,
        journal_sync=False)
    running.start()
    yield running
    running.stop()
