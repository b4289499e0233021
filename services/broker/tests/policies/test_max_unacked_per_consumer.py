"""maxUnackedMessagesPerConsumer (namespace policy) with the official client: a Shared
consumer gets no more messages once it holds the limit unacknowledged, and gets them
again once acknowledgements bring that down to half of it, as Apache's consumer does."""

from __future__ import annotations

import time

import pulsar
import pytest

LIMIT = 10


def _wait_for(condition, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


def _receive(consumer, count):
    return [consumer.receive(timeout_millis=10_000) for _ in range(count)]


def _nothing_more(consumer):
    with pytest.raises(pulsar.Timeout):
        consumer.receive(timeout_millis=1_000)


def test_a_shared_consumer_stops_at_its_limit_and_resumes_at_half(client, admin, namespace):
    admin.set_policy(namespace, "maxUnackedMessagesPerConsumer", LIMIT)
    topic = f"persistent://{namespace}/unacked-per-consumer"
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                receiver_queue_size=1000)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(30):
        producer.send(f"m{i}".encode())

    held = _receive(consumer, LIMIT)
    _nothing_more(consumer)
    consumer_stats = lambda: admin.stats(topic)["subscriptions"]["sub"]["consumers"][0]
    assert consumer_stats()["unackedMessages"] == LIMIT

    # One short of half the limit acknowledged: still blocked.
    for message in held[:LIMIT // 2 - 1]:
        consumer.acknowledge(message)
    _wait_for(lambda: consumer_stats()["unackedMessages"] == LIMIT - (LIMIT // 2 - 1))
    _nothing_more(consumer)

    # Down to half: dispatch resumes, up to the limit again.
    consumer.acknowledge(held[LIMIT // 2 - 1])
    more = _receive(consumer, LIMIT // 2)
    _nothing_more(consumer)
    assert [m.data() for m in held + more] == [f"m{i}".encode() for i in range(LIMIT + LIMIT // 2)]
    producer.close()
    consumer.close()
