"""The official C++-based client talks to a broker made of nothing but our codec.

If a field number or type in pulsar_api.proto were wrong, the client would
fail to connect, time out, or the server would decode other values than the
client was asked to send. No real broker is involved.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pulsar
import pytest
from pulsar_common.wire import batch, entry
from pulsar_common.wire import pulsar_api_pb2 as pb

pytestmark = pytest.mark.timeout(120)

_QUIET = logging.getLogger("pulsar-client-interop")
_QUIET.setLevel(logging.ERROR)


def _client(broker) -> pulsar.Client:
    return pulsar.Client(broker.url, operation_timeout_seconds=15, logger=_QUIET)


async def test_official_producer_send_is_decoded_field_by_field(fake_broker) -> None:
    def produce() -> tuple[int, int, int, pulsar.MessageId]:
        client = _client(fake_broker)
        try:
            producer = client.create_producer(
                "persistent://public/default/interop", producer_name="interop-producer"
            )
            before_ms = int(time.time() * 1000)
            msg_id = producer.send(
                b"hello wire",
                properties={"colour": "blue"},
                partition_key="key-1",
                event_timestamp=1234,
            )
            after_ms = int(time.time() * 1000)
            producer.close()
            return before_ms, after_ms, 0, msg_id
        finally:
            client.close()

    before_ms, after_ms, _, msg_id = await asyncio.to_thread(produce)

    assert fake_broker.errors == []
    connect = fake_broker.connects[0]
    assert connect.client_version
    assert connect.protocol_version >= 6
    [send] = fake_broker.sends()
    assert send.command.send.producer_id == 0
    assert send.command.send.sequence_id == 0
    assert send.checksum is not None and send.checksum_valid
    assert send.entry is not None
    metadata = entry.parse_entry_metadata(send.entry)
    assert metadata.producer_name == "interop-producer"
    assert metadata.sequence_id == 0
    assert before_ms <= metadata.publish_time <= after_ms
    assert {p.key: p.value for p in metadata.properties} == {"colour": "blue"}
    assert metadata.partition_key == "key-1"
    assert entry.sticky_key(metadata) == b"key-1"
    assert metadata.event_time == 1234
    assert not entry.is_batch(metadata)
    assert bytes(entry.entry_payload(send.entry)) == b"hello wire"
    # Our SEND_RECEIPT came back to the application as its message id.
    assert (msg_id.ledger_id(), msg_id.entry_id()) == (fake_broker.ledger_id, 0)


async def test_official_consumer_reads_stored_entries_sent_as_message_frames(
    fake_broker,
) -> None:
    topic = "persistent://public/default/replay"

    def produce_then_consume() -> list[tuple[bytes, dict[str, str], int, int, int]]:
        client = _client(fake_broker)
        try:
            single = client.create_producer(topic, producer_name="single")
            single.send(b"one", properties={"n": "1"})
            batched = client.create_producer(
                topic,
                producer_name="batched",
                batching_enabled=True,
                batching_max_publish_delay_ms=60_000,
                compression_type=pulsar.CompressionType.LZ4,
            )
            for i in range(3):
                batched.send_async(b"batched-%d" % i, None, properties={"n": str(i)})
            batched.flush()
            consumer = client.subscribe(topic, "sub", receiver_queue_size=10)
            got = []
            for _ in range(4):
                msg = consumer.receive(timeout_millis=15_000)
                mid = msg.message_id()
                got.append(
                    (
                        msg.data(),
                        msg.properties(),
                        mid.entry_id(),
                        mid.batch_index(),
                        mid.ledger_id(),
                    )
                )
                consumer.acknowledge(msg)
            consumer.close()
            return got
        finally:
            client.close()

    got = await asyncio.to_thread(produce_then_consume)

    assert fake_broker.errors == []
    assert [(data, props) for data, props, *_ in got] == [
        (b"one", {"n": "1"}),
        (b"batched-0", {"n": "0"}),
        (b"batched-1", {"n": "1"}),
        (b"batched-2", {"n": "2"}),
    ]
    assert [(e, b, led) for _, _, e, b, led in got] == [
        (0, -1, fake_broker.ledger_id),
        (1, 0, fake_broker.ledger_id),
        (1, 1, fake_broker.ledger_id),
        (1, 2, fake_broker.ledger_id),
    ]


async def test_batches_from_official_client_unpack_with_every_compression(
    fake_broker,
) -> None:
    kinds = {
        "NONE": (pulsar.CompressionType.NONE, pb.NONE),
        "LZ4": (pulsar.CompressionType.LZ4, pb.LZ4),
        "ZLIB": (pulsar.CompressionType.ZLib, pb.ZLIB),
        "ZSTD": (pulsar.CompressionType.ZSTD, pb.ZSTD),
        "SNAPPY": (pulsar.CompressionType.SNAPPY, pb.SNAPPY),
    }

    def produce() -> None:
        client = _client(fake_broker)
        try:
            for name, (client_kind, _) in kinds.items():
                producer = client.create_producer(
                    f"persistent://public/default/batch-{name}",
                    producer_name=f"batch-{name}",
                    batching_enabled=True,
                    batching_max_publish_delay_ms=60_000,
                    compression_type=client_kind,
                )
                for i in range(3):
                    payload = (b"%s message %d " % (name.encode(), i)) * 20
                    producer.send_async(payload, None, properties={"i": str(i)})
                producer.flush()
                producer.close()
        finally:
            client.close()

    await asyncio.to_thread(produce)

    assert fake_broker.errors == []
    sends = fake_broker.sends()
    assert len(sends) == len(kinds)
    for (name, (_, wire_kind)), send in zip(kinds.items(), sends, strict=True):
        assert send.entry is not None and send.checksum_valid
        assert send.command.send.num_messages == 3
        metadata, messages = batch.read_messages(send.entry)
        assert metadata.producer_name == f"batch-{name}"
        assert metadata.compression == wire_kind
        assert metadata.num_messages_in_batch == 3
        assert [m.batch_index for m in messages] == [0, 1, 2]
        assert [m.payload for m in messages] == [
            (b"%s message %d " % (name.encode(), i)) * 20 for i in range(3)
        ]
        assert [{p.key: p.value for p in m.metadata.properties} for m in messages] == [
            {"i": "0"},
            {"i": "1"},
            {"i": "2"},
        ]
        assert [m.metadata.sequence_id for m in messages] == [0, 1, 2]


async def test_key_based_batches_carry_the_sticky_key_in_the_outer_metadata(fake_broker) -> None:
    def produce() -> None:
        client = _client(fake_broker)
        try:
            keyed = client.create_producer(
                "persistent://public/default/keyed",
                batching_enabled=True,
                batching_type=pulsar.BatchingType.KeyBased,
                batching_max_publish_delay_ms=60_000,
            )
            for i in range(3):
                keyed.send_async(b"k%d" % i, None, partition_key="user-7")
            keyed.flush()
            plain = client.create_producer("persistent://public/default/keyed")
            plain.send(b"z", partition_key="pk", ordering_key="ok-1", deliver_at=1234567)
        finally:
            client.close()

    await asyncio.to_thread(produce)

    assert fake_broker.errors == []
    keyed_send, plain_send = fake_broker.sends()
    keyed_metadata, keyed_messages = batch.read_messages(keyed_send.entry)
    assert entry.message_count(keyed_metadata) == 3
    assert entry.sticky_key(keyed_metadata) == b"user-7"
    assert {m.metadata.partition_key for m in keyed_messages} == {"user-7"}
    plain_metadata = entry.parse_entry_metadata(plain_send.entry)
    assert plain_metadata.ordering_key == b"ok-1"
    assert plain_metadata.partition_key == "pk"
    assert entry.sticky_key(plain_metadata) == b"ok-1"
    assert plain_metadata.deliver_at_time == 1234567
