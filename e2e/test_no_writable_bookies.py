"""With 3 bookies and ensembles of 3, a dead bookie leaves nowhere to write: producers' sends
fail within their send timeout (the broker holds the adds and retries creating a ledger with
a growing pause, instead of failing them at once and making the client reconnect and resend
in a tight loop), and the broker's log does not fill with one line per pending message."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import local_cluster

TOPIC = "persistent://public/default/nowhere-to-write"
SEND_TIMEOUT_MS = 5000
#: The ledger client's ensembleChangeTimeoutMs: how long the writer looks for a replacement.
ENSEMBLE_CHANGE_S = 10


@pytest.fixture
def cluster(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    running = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=3, brokers=1, ensemble=3, write_quorum=2, ack_quorum=2,
        journal_sync=False)
    running.start()
    yield running
    running.stop()


class Outcomes:
    def __init__(self) -> None:
        self.results: list[pulsar.Result] = []
        self.lock = threading.Lock()

    def callback(self, result: pulsar.Result, _msg_id: pulsar.MessageId) -> None:
        with self.lock:
            self.results.append(result)

    def wait(self, count: int, timeout_s: float) -> list[pulsar.Result]:
        deadline = time.monotonic() + timeout_s
        while len(self.results) < count:
            assert time.monotonic() < deadline, (
                f"{len(self.results)} of {count} sends completed in {timeout_s} s")
            time.sleep(0.05)
        return list(self.results)


def test_sends_fail_within_their_timeout_when_no_bookie_can_replace_a_dead_one(cluster):
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(TOPIC, batching_enabled=False,
                                          send_timeout_millis=SEND_TIMEOUT_MS)
        producer.send(b"before")
        cluster.bookies[0].kill()

        first = Outcomes()
        for i in range(200):
            producer.send_async(b"during-%d" % i, first.callback)
        results = first.wait(200, SEND_TIMEOUT_MS / 1000 + ENSEMBLE_CHANGE_S + 5)
        assert pulsar.Result.Ok not in results[1:]

        # The ledger's writer gives up looking for a replacement after ENSEMBLE_CHANGE_S and
        # fails what it holds; that one failure makes the client reconnect (which restarts its
        # send timer). From then on the broker holds sends and the timeout is the client's.
        broker = cluster.brokers[0]
        deadline = time.monotonic() + ENSEMBLE_CHANGE_S + 10
        while "writer stops" not in broker.log_text():
            assert time.monotonic() < deadline, "the writer never gave up on the dead bookie"
            time.sleep(0.1)
        later = Outcomes()
        started = time.monotonic()
        producer.send_async(b"later", later.callback)
        assert later.wait(1, SEND_TIMEOUT_MS / 1000 + 3) == [pulsar.Result.Timeout]
        assert time.monotonic() - started >= SEND_TIMEOUT_MS / 1000 - 0.5
    finally:
        client.close()
    warnings = [line for line in cluster.brokers[0].log_text().splitlines() if "WARNING" in line]
    assert len(warnings) < 60, "\n".join(warnings[:20])
