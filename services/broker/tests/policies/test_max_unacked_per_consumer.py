"""maxUnackedMessagesPerConsumer (namespace policy) with the official client: a Shared
consumer gets no more messages once it holds the limit unacknowledged, and gets them
again once acknowledgements bring that down to half of it, as Apache's consumer does."""

from __future__ import annotations

import pulsar
from pulsar_broker.testing import nothing_more, receive_all
from pulsar_common.testing import wait_until

LIMIT = 10


def test_a_shared_consumer_stops_at_its_limit_and_resumes_at_half(client, admin, namespace):
    admin.set_policy(namespace, "maxUnackedMessagesPerConsumer", LIMIT)
    topic = f"persistent://{namespace}/unacked-per-consumer"
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                receiver_queue_size=1000)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(30):
        producer.send(f"m{i}".encode())

    held = receive_all(consumer, LIMIT, ack=False)
    assert nothing_more(consumer, 1_000)
    unacked = lambda: admin.stats(topic)["subscriptions"]["sub"]["consumers"][0][
        "unackedMessages"]
    assert unacked() == LIMIT

    # One short of half the limit acknowledged: still blocked.
    for message in held[:LIMIT // 2 - 1]:
        consumer.acknowledge(message)
    wait_until(lambda: unacked() == LIMIT - (LIMIT // 2 - 1), 10, "acks counted")
    assert nothing_more(consumer, 1_000)

    # Down to half: dispatch resumes, up to the limit again.
    consumer.acknowledge(held[LIMIT // 2 - 1])
    more = receive_all(consumer, LIMIT // 2, ack=False)
    assert nothing_more(consumer, 1_000)
    assert [m.data() for m in held + more] == [f"m{i}".encode() for i in range(LIMIT + LIMIT // 2)]
    producer.close()
    consumer.close()
