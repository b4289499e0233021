"""Issue 17, finding 7: adds in flight when a ledger's writer gives up.

With 3 bookies and ensembles of 3, a dead bookie leaves the writer no replacement; after
ensembleChangeTimeoutMs it stops and the managed ledger rolls over, retrying the new
ledger's creation until managedLedgerAddEntryTimeoutSeconds. The adds that were in
flight on the broken ledger go back to the head of the queue and are written to the new
ledger, as Apache's managed ledger re-submits the pending adds of a failed ledger: the
send completes once a bookie is back, and the producer's connection stays up.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from pulsar_broker import local_cluster
from pulsar_broker.testing import RawConnection, read_topic
from pulsar_common.wire import pulsar_api_pb2 as pb

TOPIC = "persistent://public/default/in-flight-when-the-writer-stops"
#: The ledger client's ensembleChangeTimeoutMs (10 s) and some room.
WRITER_GIVES_UP_S = 25


@pytest.fixture
def cluster(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    running = local_cluster.LocalCluster(
        # Every entry on every bookie, so the next add needs the bookie the test kills.
        tmp_path / "cluster", bookies=3, brokers=1, ensemble=3, write_quorum=3, ack_quorum=3,
        # Kept without a subscription, so the ledger left behind can be read back.
        broker_overrides={"defaultRetentionTimeInMinutes": "-1",
                          "defaultRetentionSizeInMB": "-1"},
        journal_sync=False)
    running.start()
    yield running
    running.stop()


def test_a_send_in_flight_when_the_writer_gives_up_completes_once_a_bookie_returns(cluster):
    producer = RawConnection(cluster.brokers[0].broker_port, timeout_s=60)
    name = producer.create_producer(TOPIC).producer_name
    producer.send_message(name, 0, b"m0")
    assert producer.read().command.type == pb.BaseCommand.SEND_RECEIPT
    cluster.bookies[0].kill()
    producer.send_message(name, 1, b"m1")
    broker = cluster.brokers[0]
    deadline = time.monotonic() + WRITER_GIVES_UP_S
    while "writer stops" not in broker.log_text():
        assert time.monotonic() < deadline, "the writer never gave up on the dead bookie"
        time.sleep(0.1)
    cluster.bookies[0].start()
    try:
        reply = producer.read()
    except ConnectionError as exc:
        raise AssertionError("the in-flight send failed: the broker closed the connection "
                             "instead of writing it to the next ledger") from exc
    assert reply.command.type == pb.BaseCommand.SEND_RECEIPT, reply.command
    assert reply.command.send_receipt.sequence_id == 1
    producer.close()
    assert read_topic(cluster.service_url, TOPIC) == [b"m0", b"m1"]
