"""Exclusive, Failover, Shared and Key_Shared as the official client sees them."""

from __future__ import annotations

import collections
import time

import pulsar
import pytest

from pulsar_broker.testing import nothing_more, receive_all


def test_exclusive_refuses_a_second_consumer(client, topic):
    client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)


def test_exclusive_consumer_gets_everything(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer(topic)
    for i in range(20):
        producer.send(b"%d" % i)
    assert [m.data() for m in receive_all(consumer, 20)] == [b"%d" % i for i in range(20)]


def test_failover_delivers_to_one_consumer_and_switches_when_it_closes(client, topic):
    first = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Failover,
                             consumer_name="a")
    second = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Failover,
                              consumer_name="b")
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(b"first-%d" % i)
    got = receive_all(first, 10)
    assert [m.data() for m in got] == [b"first-%d" % i for i in range(10)]
    assert nothing_more(second)
    first.close()
    for i in range(10):
        producer.send(b"second-%d" % i)
    assert [m.data() for m in receive_all(second, 10)] == [b"second-%d" % i for i in range(10)]


def test_shared_spreads_messages_over_consumers(client, topic):
    consumers = [client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                  receiver_queue_size=10) for _ in range(3)]
    producer = client.create_producer(topic)
    for i in range(90):
        producer.send_async(b"%d" % i, None)
    producer.flush()
    seen: dict[int, list[bytes]] = collections.defaultdict(list)
    deadline = time.monotonic() + 20
    total = 0
    while total < 90 and time.monotonic() < deadline:
        for index, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(timeout_millis=50)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(msg)
            seen[index].append(msg.data())
            total += 1
    assert sorted(d for v in seen.values() for d in v) == sorted(b"%d" % i for i in range(90))
    assert all(seen[i] for i in range(3)), "every consumer should get a share"


def test_shared_redelivers_unacked_messages_of_a_closed_consumer(client, topic):
    leaving = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(b"%d" % i)
    held = receive_all(leaving, 10, ack=False)
    assert len(held) == 10
    staying = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    leaving.close()
    again = receive_all(staying, 10)
    assert sorted(m.data() for m in again) == sorted(b"%d" % i for i in range(10))
    assert all(m.redelivery_count() >= 1 for m in again)


def test_key_shared_keeps_each_key_on_one_consumer(client, topic):
    consumers = [client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.KeyShared,
                                  consumer_name=f"c{i}") for i in range(3)]
    producer = client.create_producer(topic, batching_enabled=False)
    keys = [f"key-{k}" for k in range(12)]
    for i in range(120):
        producer.send_async(b"%d" % i, None, partition_key=keys[i % len(keys)])
    producer.flush()
    owner: dict[str, int] = {}
    order: dict[str, list[int]] = collections.defaultdict(list)
    received = 0
    deadline = time.monotonic() + 20
    while received < 120 and time.monotonic() < deadline:
        for index, consumer in enumerate(consumers):
            try:
                msg = consumer.receive(timeout_millis=50)
            except pulsar.Timeout:
                continue
            consumer.acknowledge(msg)
            received += 1
            key = msg.partition_key()
            assert owner.setdefault(key, index) == index, f"{key} went to two consumers"
            order[key].append(int(msg.data()))
    assert received == 120
    assert all(values == sorted(values) for values in order.values())
    assert len(set(owner.values())) > 1, "keys should be spread over consumers"
