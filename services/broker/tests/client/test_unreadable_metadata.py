"""A SEND whose metadata no client could read is refused (SEND_ERROR MetadataError, as Apache
answers metadata it refuses) and never stored, so it cannot stall a subscription or make the
official consumer reconnect forever; the good messages around it are delivered."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import pulsar
import pytest
from pulsar_broker.testing import nothing_more, receive_all
from pulsar_common.wire import pulsar_api_pb2 as pb


def _entry(metadata: bytes, payload: bytes = b"payload") -> bytes:
    return struct.pack(">I", len(metadata)) + metadata + payload


UNREADABLE = {
    # Not a protobuf at all (a truncated varint field).
    "garbage": _entry(b"\xff\xff\xff\xff"),
    # metadataSize 0: an empty MessageMetadata misses producer_name, sequence_id, publish_time.
    "empty": _entry(b""),
}


@pytest.mark.parametrize("kind", sorted(UNREADABLE))
def test_unreadable_metadata_is_refused_and_not_stored(
        standalone: Any, client: pulsar.Client, topic: str, kind: str,
        raw_connection: Callable[[], Any]) -> None:
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    cnx = raw_connection()
    cnx.create_producer(topic)
    reply = cnx.send_entry(UNREADABLE[kind])
    assert reply.command.type == pb.BaseCommand.SEND_ERROR
    assert reply.command.send_error.error == pb.MetadataError
    assert reply.command.send_error.message.startswith("Invalid message")
    producer.send(b"after")

    consumer = client.subscribe(topic, "from-earliest",
                                initial_position=pulsar.InitialPosition.Earliest)
    assert [m.data() for m in receive_all(consumer, 2)] == [b"before", b"after"]
    assert nothing_more(consumer)
