"""Individual, cumulative and negative acknowledgements; ack timeouts; redelivery counts."""

from __future__ import annotations

import pulsar

from pulsar_broker.testing import nothing_more, receive_all


def test_acknowledged_messages_are_not_redelivered_after_reconnect(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(b"%d" % i)
    got = receive_all(consumer, 10, ack=False)
    for msg in got[:5]:
        consumer.acknowledge(msg)
    consumer.close()
    consumer = client.subscribe(topic, "sub")
    rest = receive_all(consumer, 5)
    assert [m.data() for m in rest] == [b"%d" % i for i in range(5, 10)]
    assert nothing_more(consumer)


def test_individual_ack_holes_are_redelivered(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(b"%d" % i)
    got = receive_all(consumer, 10, ack=False)
    for msg in got:
        if int(msg.data()) % 2 == 0:
            consumer.acknowledge(msg)
    consumer.close()
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared)
    again = sorted(int(m.data()) for m in receive_all(consumer, 5))
    assert again == [1, 3, 5, 7, 9]


def test_cumulative_ack_acknowledges_everything_before(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for i in range(10):
        producer.send(b"%d" % i)
    got = receive_all(consumer, 10, ack=False)
    consumer.acknowledge_cumulative(got[6])
    consumer.close()
    consumer = client.subscribe(topic, "sub")
    assert [m.data() for m in receive_all(consumer, 3)] == [b"7", b"8", b"9"]


def test_negative_ack_redelivers_with_a_redelivery_count(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic)
    producer.send(b"retry-me")
    first = consumer.receive(timeout_millis=10_000)
    assert first.redelivery_count() == 0
    consumer.negative_acknowledge(first)
    second = consumer.receive(timeout_millis=10_000)
    assert second.data() == b"retry-me"
    assert second.redelivery_count() == 1
    consumer.acknowledge(second)


def test_ack_timeout_redelivers_unacked_messages(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                unacked_messages_timeout_ms=10_000)  # the client minimum
    producer = client.create_producer(topic)
    producer.send(b"slow")
    first = consumer.receive(timeout_millis=10_000)
    again = consumer.receive(timeout_millis=30_000)
    assert again.data() == first.data() == b"slow"
    assert again.redelivery_count() >= 1
    consumer.acknowledge(again)


def test_exclusive_redeliver_all_unacked(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(b"%d" % i)
    receive_all(consumer, 5, ack=False)
    consumer.redeliver_unacknowledged_messages()
    assert [m.data() for m in receive_all(consumer, 5)] == [b"%d" % i for i in range(5)]


def test_dead_letter_topic_gets_messages_after_max_redeliveries(client, topic):
    dlq = topic + "-DLQ"
    dlq_consumer = client.subscribe(dlq, "dlq-sub")
    consumer = client.subscribe(
        topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
        negative_ack_redelivery_delay_ms=100,
        dead_letter_policy=pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=2,
                                                           dead_letter_topic=dlq))
    client.create_producer(topic).send(b"poison")
    for _ in range(3):
        msg = consumer.receive(timeout_millis=10_000)
        consumer.negative_acknowledge(msg)
    dead = dlq_consumer.receive(timeout_millis=15_000)
    assert dead.data() == b"poison"
