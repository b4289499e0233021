"""A SEND whose batch cannot hold the messages it announces is refused with SEND_ERROR
MetadataError and never stored: the official consumer would read past its buffer (SIGSEGV).
Uncompressed batches are walked record by record; compressed ones are bounded by their
uncompressed size. Valid batches, the official client's included, are stored as before."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pulsar
import pytest
from pulsar_broker.testing import nothing_more, receive_all
from pulsar_common.wire import pulsar_api_pb2 as pb


def _record(payload: bytes) -> bytes:
    single = pb.SingleMessageMetadata(payload_size=len(payload)).SerializeToString()
    return struct.pack(">I", len(single)) + single + payload


def _batch(count: int, payload: bytes, **fields: Any) -> bytes:
    metadata = pb.MessageMetadata(producer_name="raw", sequence_id=0, publish_time=1,
                                  num_messages_in_batch=count, **fields).SerializeToString()
    return struct.pack(">I", len(metadata)) + metadata + payload


INVALID = {
    "1000 in 16 bytes": _batch(1000, b"x" * 16),
    "10^9 in 16 bytes": _batch(10**9, b"x" * 16),
    "2^31-1 in 16 bytes": _batch(2**31 - 1, b"x" * 16),
    "3 announced, 2 present": _batch(3, _record(b"one") + _record(b"two") + b"\0" * 8),
    "a record running past the batch": _batch(1, _record(b"one")[:-1]),
    "zero messages": _batch(0, _record(b"one")),
    "compressed, 1000 in 16 uncompressed bytes": _batch(
        1000, b"x" * 4000, compression=pb.LZ4, uncompressed_size=16),
}


@pytest.mark.parametrize("kind", list(INVALID))
def test_a_batch_that_cannot_hold_its_count_is_refused(
        client: pulsar.Client, topic: str, kind: str,
        raw_connection: Callable[[], Any]) -> None:
    cnx = raw_connection()
    cnx.create_producer(topic)
    reply = cnx.send_entry(INVALID[kind], num_messages=3)
    assert reply.command.type == pb.BaseCommand.SEND_ERROR
    assert reply.command.send_error.error == pb.MetadataError
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert not reader.has_message_available()


def test_valid_batches_are_stored_and_delivered(
        client: pulsar.Client, topic: str, raw_connection: Callable[[], Any]) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    cnx = raw_connection()
    cnx.create_producer(topic)
    raw = _batch(3, _record(b"one") + _record(b"two") + _record(b""))
    reply = cnx.send_entry(raw, num_messages=3)
    assert reply.command.type == pb.BaseCommand.SEND_RECEIPT
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=50,
                                      compression_type=pulsar.CompressionType.LZ4)
    for text in (b"four", b"five"):
        producer.send_async(text, None)
    producer.flush()
    received = [m.data() for m in receive_all(consumer, 5)]
    assert received == [b"one", b"two", b"", b"four", b"five"]
    assert nothing_more(consumer)
