"""Issue 17, finding 7, the part left: adds in flight when a ledger's writer gives up.

With 3 bookies and ensembles of 3, a dead bookie leaves the writer no replacement; after
ensembleChangeTimeoutMs it stops and the managed ledger rolls over, retrying the new
ledger's creation until managedLedgerAddEntryTimeoutSeconds. Adds that arrive after that
wait for the new ledger and succeed once a bookie is back; the adds that were in flight
on the broken ledger are failed at once instead, and the broker closes the producer's
connection (the official client reconnects and resends them). Apache's managed ledger re-submits the pending
adds of a failed ledger to the next one; the same here would make an in-flight send
succeed when the bookie returns within the add timeout.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from pulsar_broker import local_cluster
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

TOPIC = "persistent://public/default/in-flight-when-the-writer-stops"
#: The ledger client's ensembleChangeTimeoutMs (10 s) and some room.
WRITER_GIVES_UP_S = 25


@pytest.fixture
def cluster(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    running = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=3, brokers=1, ensemble=3, write_quorum=2, ack_quorum=2,
        journal_sync=False)
    running.start()
    yield running
    running.stop()


class RawProducer:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.decoder = frame.FrameDecoder()
        self.pending: list[frame.Frame] = []
        connect = pb.BaseCommand(type=pb.BaseCommand.CONNECT)
        connect.connect.client_version = "requeue-test"
        connect.connect.protocol_version = 20
        self.sock.sendall(frame.encode_command(connect))
        assert self.read().command.type == pb.BaseCommand.CONNECTED
        producer = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
        producer.producer.topic = TOPIC
        producer.producer.producer_id = 1
        producer.producer.request_id = 1
        self.sock.sendall(frame.encode_command(producer))
        assert self.read().command.type == pb.BaseCommand.PRODUCER_SUCCESS

    def send(self, sequence_id: int) -> None:
        command = pb.BaseCommand(type=pb.BaseCommand.SEND)
        command.send.producer_id = 1
        command.send.sequence_id = sequence_id
        metadata = pb.MessageMetadata(producer_name="requeue", sequence_id=sequence_id,
                                      publish_time=int(time.time() * 1000))
        self.sock.sendall(frame.encode_payload_command(command, metadata, b"m%d" % sequence_id))

    def read(self) -> frame.Frame:
        while True:
            while not self.pending:
                data = self.sock.recv(65536)
                assert data, "closed by the broker"
                self.pending.extend(self.decoder.feed(data))
            received = self.pending.pop(0)
            if received.command.type == pb.BaseCommand.PING:
                self.sock.sendall(frame.encode_command(pb.BaseCommand(type=pb.BaseCommand.PONG)))
                continue
            return received


@pytest.mark.xfail(strict=True, reason=(
    "issue 17 finding 7: adds in flight on a ledger whose writer gave up are failed, not "
    "re-queued onto the next ledger (managed_ledger/ledger.py write_failed, "
    "add_pipeline.py), owned by another helper"))
def test_a_send_in_flight_when_the_writer_gives_up_completes_once_a_bookie_returns(cluster):
    producer = RawProducer(cluster.brokers[0].broker_port)
    producer.send(0)
    assert producer.read().command.type == pb.BaseCommand.SEND_RECEIPT
    cluster.bookies[0].kill()
    producer.send(1)
    broker = cluster.brokers[0]
    deadline = time.monotonic() + WRITER_GIVES_UP_S
    while "writer stops" not in broker.log_text():
        assert time.monotonic() < deadline, "the writer never gave up on the dead bookie"
        time.sleep(0.1)
    cluster.bookies[0].start()
    try:
        reply = producer.read()
    except AssertionError as exc:
        raise AssertionError("the in-flight send failed: the broker closed the connection "
                             "instead of writing it to the next ledger") from exc
    assert reply.command.type == pb.BaseCommand.SEND_RECEIPT, reply.command
    assert reply.command.send_receipt.sequence_id == 1
