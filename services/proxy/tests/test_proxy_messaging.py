"""What applications do, through the proxy, with the official client: every subscription
type, partitioned topics, readers, seek, schemas, regex subscriptions."""

from __future__ import annotations

import re
import uuid

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, Record, String
from pulsar_broker import testing as broker_testing


@pytest.mark.parametrize("sub_type", [pulsar.ConsumerType.Exclusive, pulsar.ConsumerType.Failover,
                                      pulsar.ConsumerType.Shared, pulsar.ConsumerType.KeyShared])
def test_each_subscription_type_receives_what_was_produced_through_the_proxy(
        client: pulsar.Client, topic: str, sub_type: pulsar.ConsumerType) -> None:
    consumer = client.subscribe(topic, "sub", consumer_type=sub_type)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=50)
    for i in range(200):
        producer.send_async(f"m{i}".encode(), None, partition_key=f"k{i % 7}")
    producer.flush()
    received = broker_testing.receive_all(consumer, 200)
    assert sorted(m.data() for m in received) == sorted(f"m{i}".encode() for i in range(200))
    assert broker_testing.nothing_more(consumer)


def test_unacknowledged_messages_come_back_after_the_consumer_reconnects(
        client: pulsar.Client, topic: str, proxy: broker_testing.ProxyProcess) -> None:
    producer = client.create_producer(topic)
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    for i in range(5):
        producer.send(f"m{i}".encode())
    first = broker_testing.receive_all(consumer, 5, ack=False)
    consumer.acknowledge(first[0])
    consumer.close()
    again = pulsar.Client(proxy.service_url, operation_timeout_seconds=30)
    try:
        resubscribed = again.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
        back = broker_testing.receive_all(resubscribed, 4)
        assert sorted(m.data() for m in back) == [f"m{i}".encode() for i in range(1, 5)]
    finally:
        again.close()


def test_partitioned_topic_spreads_keys_and_keeps_partition_order(
        client: pulsar.Client, proxy: broker_testing.ProxyProcess) -> None:
    import urllib.request

    name = f"parts-{uuid.uuid4().hex[:8]}"
    request = urllib.request.Request(
        f"{proxy.web_url}/admin/v2/persistent/public/default/{name}/partitions",
        data=b"3", method="PUT", headers={"Content-Type": "application/json"})
    assert urllib.request.urlopen(request, timeout=30).status == 204
    topic = f"persistent://public/default/{name}"
    assert client.get_topic_partitions(topic) == [f"{topic}-partition-{i}" for i in range(3)]
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for i in range(60):
        producer.send(f"{i % 6}:{i}".encode(), partition_key=str(i % 6))
    received = broker_testing.receive_all(consumer, 60)
    by_key: dict[str, list[int]] = {}
    for msg in received:
        key, number = msg.data().decode().split(":")
        by_key.setdefault(key, []).append(int(number))
    assert all(numbers == sorted(numbers) for numbers in by_key.values())
    assert sum(len(v) for v in by_key.values()) == 60


def test_reader_reads_from_earliest_and_seek_replays(client: pulsar.Client, topic: str) -> None:
    producer = client.create_producer(topic)
    ids = [producer.send(f"m{i}".encode()) for i in range(10)]
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [reader.read_next(10_000).data() for _ in range(10)] == [
        f"m{i}".encode() for i in range(10)]
    reader.seek(ids[6])
    assert reader.read_next(10_000).data() in (b"m6", b"m7")  # inclusive or not, then in order
    consumer = client.subscribe(topic, "seeker", initial_position=pulsar.InitialPosition.Earliest)
    broker_testing.receive_all(consumer, 10)
    consumer.seek(pulsar.MessageId.earliest)
    assert [m.data() for m in broker_testing.receive_all(consumer, 10)] == [
        f"m{i}".encode() for i in range(10)]


class Reading(Record):
    sensor = String()
    value = Integer()


def test_schema_is_registered_and_decoded_through_the_proxy(client: pulsar.Client,
                                                            topic: str) -> None:
    producer = client.create_producer(topic, schema=AvroSchema(Reading))
    consumer = client.subscribe(topic, "sub", schema=AvroSchema(Reading))
    producer.send(Reading(sensor="s1", value=7))
    msg = consumer.receive(10_000)
    assert (msg.value().sensor, msg.value().value) == ("s1", 7)
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=pulsar.schema.StringSchema())


def test_regex_subscription_finds_the_namespace_topics_through_the_proxy(
        client: pulsar.Client) -> None:
    prefix = f"rx-{uuid.uuid4().hex[:8]}"
    topics = [f"persistent://public/default/{prefix}-{i}" for i in range(3)]
    producers = [client.create_producer(t) for t in topics]
    consumer = client.subscribe(re.compile(f"persistent://public/default/{prefix}-.*"), "sub")
    for i, producer in enumerate(producers):
        producer.send(f"from-{i}".encode())
    received = broker_testing.receive_all(consumer, 3)
    assert sorted(m.data() for m in received) == [b"from-0", b"from-1", b"from-2"]
