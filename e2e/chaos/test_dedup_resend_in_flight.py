"""Deduplication and a resend that overtakes its own first add.

Found by the 100-cycle chaos run with seed 20261125 (one acknowledged message lost on a
deduplicated topic): a producer whose connection dropped while a SEND was still being
written reconnects and resends it. The broker used to answer that resend at once as a
duplicate (message id -1:-1) because its sequence id had been pushed; when the first add
then failed, nothing held the message although the client had been told it was stored.
A resend is a duplicate only once its first add is persisted; before that it is refused
(the client resends it again), as Apache's broker does.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator

import pytest
from pulsar_broker import local_cluster
from pulsar_broker.testing import RawConnection, read_topic
from pulsar_common.wire import pulsar_api_pb2 as pb

NAME = "resender"


def producer(port: int, topic: str) -> tuple[RawConnection, int]:
    """A raw connection with producer NAME; the last sequence id the broker says it sent."""
    cnx = RawConnection(port, timeout_s=60)
    return cnx, cnx.create_producer(topic, producer_name=NAME).last_sequence_id


@pytest.fixture
def cluster(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    # Every entry on every bookie: pausing any one of them holds every add.
    running = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=3, brokers=1, ensemble=3, write_quorum=3, ack_quorum=3,
        broker_overrides={"brokerDeduplicationEnabled": "true",
                          "defaultRetentionTimeInMinutes": "-1", "defaultRetentionSizeInMB": "-1"},
        journal_sync=False)
    running.start()
    yield running
    running.stop()


def test_a_resend_is_not_acknowledged_while_its_first_add_is_in_flight(cluster):
    topic = f"persistent://public/default/dedup-in-flight-{uuid.uuid4().hex[:8]}"
    port = cluster.brokers[0].broker_port
    first, _ = producer(port, topic)
    first.send_message(NAME, 0, b"m0")
    assert first.read().command.type == pb.BaseCommand.SEND_RECEIPT
    paused = cluster.bookies[0]
    os.kill(paused.pid, signal.SIGSTOP)
    try:
        first.send_message(NAME, 1, b"m1")  # held: one of its three bookies does not answer
        first.close()  # the client's connection drops with the send in flight
        again, last_sequence_id = producer(port, topic)
        assert last_sequence_id == 1  # pushed, as Apache's broker reports it
        again.send_message(NAME, 1, b"m1")
        try:
            reply = again.read()
        except ConnectionError:
            reply = None  # refused by closing the connection: the client resends later
        except TimeoutError:
            pytest.fail("the resend got no answer at all")
        if reply is not None:
            assert reply.command.type != pb.BaseCommand.SEND_RECEIPT, (
                "a resend was acknowledged while its first add could still fail")
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    # Once the first add is persisted, the resend is a duplicate: acknowledged, stored once.
    deadline = time.monotonic() + 60
    while True:
        retry, _ = producer(port, topic)
        retry.send_message(NAME, 1, b"m1")
        try:
            reply = retry.read()
        except ConnectionError:
            reply = None
        retry.close()
        if reply is not None and reply.command.type == pb.BaseCommand.SEND_RECEIPT:
            receipt = reply.command.send_receipt.message_id
            assert (receipt.ledgerId, receipt.entryId) == (2**64 - 1, 2**64 - 1)  # -1:-1
            break
        assert time.monotonic() < deadline, "the resend was never acknowledged"
        time.sleep(0.2)
    assert read_topic(cluster.service_url, topic) == [b"m0", b"m1"]
