"""Producer, consumer and subscription limits and the publish rate of a namespace, enforced on
the official client as Apache's broker does."""

from __future__ import annotations

import time

import pulsar
import pytest


def test_max_producers_per_topic_refuses_the_next_producer(client, admin, namespace):
    admin.set_policy(namespace, "maxProducersPerTopic", 1)
    topic = f"persistent://{namespace}/producers"
    first = client.create_producer(topic)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    first.close()
    client.create_producer(topic).close()  # room again once the first left


def test_max_consumers_per_subscription_and_per_topic(client, admin, namespace):
    admin.set_policy(namespace, "maxConsumersPerSubscription", 1)
    admin.set_policy(namespace, "maxConsumersPerTopic", 2)
    topic = f"persistent://{namespace}/consumers"
    shared = pulsar.ConsumerType.Shared
    a = client.subscribe(topic, "one", consumer_type=shared)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "one", consumer_type=shared)
    b = client.subscribe(topic, "two", consumer_type=shared)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "three", consumer_type=shared)
    a.close()
    b.close()


def test_max_subscriptions_per_topic_refuses_a_new_subscription(client, admin, namespace):
    admin.set_policy(namespace, "maxSubscriptionsPerTopic", 1)
    topic = f"persistent://{namespace}/subscriptions"
    client.subscribe(topic, "first").close()
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(topic, "second")
    client.subscribe(topic, "first").close()  # the existing one still admits consumers


def test_a_producer_limited_to_1000_messages_per_second_gets_that_rate(client, admin, namespace):
    admin.set_policy(namespace, "publishRate",
                     {"publishThrottlingRateInMsg": 1000, "publishThrottlingRateInByte": -1})
    topic = f"persistent://{namespace}/rate"
    # The broker stops reading while the topic is in debt and then reads what the client has
    # queued in one go, so receipts come in bursts of up to max_pending_messages: at 500 a
    # 4 s window held 8 or 9 bursts (1000 or 1125 msg/s, seen in CI); at 100 one burst is
    # 2.5% of the window.
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True,
                                      max_pending_messages=100)
    acknowledged: list[float] = []
    started = time.monotonic()
    while time.monotonic() - started < 6.0:  # as fast as the client can
        producer.send_async(b"x" * 10, lambda result, _id: acknowledged.append(time.monotonic()))
    producer.flush()
    # Receipts in the middle of the run: past the start's burst, before the end's drain.
    window = [t for t in acknowledged if started + 1.0 <= t < started + 5.0]
    rate = len(window) / 4.0
    assert 900 <= rate <= 1100, rate
    producer.close()
