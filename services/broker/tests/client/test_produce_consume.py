"""Producing and consuming with the official client: batching, compression, metadata."""

from __future__ import annotations

import pulsar
import pytest

from pulsar_broker.testing import receive_all


@pytest.mark.parametrize("batching", [False, True])
def test_messages_arrive_in_order_with_and_without_batching(client, topic, batching):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=batching,
                                      batching_max_publish_delay_ms=5)
    payloads = [f"message-{i}".encode() for i in range(200)]
    for payload in payloads:
        producer.send_async(payload, None)
    producer.flush()
    got = receive_all(consumer, len(payloads))
    assert [m.data() for m in got] == payloads


@pytest.mark.parametrize("compression", ["LZ4", "ZLib", "ZSTD", "SNAPPY"])
def test_compressed_batches_round_trip(client, topic, compression):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_publish_delay_ms=5,
        compression_type=getattr(pulsar.CompressionType, compression))
    payloads = [(b"compressible " * 20) + str(i).encode() for i in range(50)]
    for payload in payloads:
        producer.send_async(payload, None)
    producer.flush()
    assert [m.data() for m in receive_all(consumer, len(payloads))] == payloads


def test_keys_properties_and_event_time_reach_the_consumer(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"x", properties={"a": "1", "b": "two"}, partition_key="k1", event_timestamp=1234)
    msg = consumer.receive(timeout_millis=10_000)
    assert msg.partition_key() == "k1"
    assert msg.properties() == {"a": "1", "b": "two"}
    assert msg.event_timestamp() == 1234
    assert msg.publish_timestamp() > 0


def test_send_returns_increasing_message_ids(client, topic):
    producer = client.create_producer(topic)
    ids = [producer.send(b"%d" % i) for i in range(5)]
    positions = [(m.ledger_id(), m.entry_id()) for m in ids]
    assert positions == sorted(positions) and len(set(positions)) == 5


def test_generated_producer_names_are_unique(client, topic):
    first = client.create_producer(topic)
    second = client.create_producer(topic)
    assert first.producer_name() and first.producer_name() != second.producer_name()


def test_named_producer_keeps_its_name(client, topic):
    assert client.create_producer(topic, producer_name="my-prod").producer_name() == "my-prod"


def test_large_message_below_limit_is_stored_intact(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    payload = bytes(range(256)) * 4096  # 1 MiB
    producer.send(payload)
    assert consumer.receive(timeout_millis=10_000).data() == payload


def test_message_over_max_size_is_rejected_with_the_protocol_error(client, topic):
    producer = client.create_producer(topic)
    with pytest.raises(pulsar.MessageTooBig):
        producer.send(b"x" * (6 * 1024 * 1024))
    # The producer stays usable.
    producer.send(b"small")
