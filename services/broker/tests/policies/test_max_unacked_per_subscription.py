"""maxUnackedMessagesPerSubscription (broker default, namespace and topic policy): a Shared
or Key_Shared subscription gets no more messages once its consumers hold the limit
unacknowledged, and gets them again once acknowledgements bring the count below half of
it, as Apache's multi-consumer dispatcher does."""

from __future__ import annotations

import hypothesis
import pulsar
import pytest
from hypothesis import strategies as st
from pulsar_broker import config as broker_config
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.subscriptions import unacked_limit
from pulsar_broker.testing import nothing_more, receive_all
from pulsar_broker.topics import policies
from pulsar_common.testing import wait_until

LEDGER = ml_config.ManagedLedgerConfig()
LIMIT = 10


# -- the pure limit -------------------------------------------------------------------


@pytest.mark.parametrize(("steps", "expected_rooms"), [
    # (unacked count seen by the dispatcher) -> room it gets
    ([0, 5, 9], [10, 5, 1]),
    ([10, 9, 6, 5], [0, 0, 0, 0]),        # blocked at the limit, still blocked at half
    ([10, 4, 5, 9], [0, 6, 5, 1]),        # below half: unblocked, room up to the limit
    ([12, 7, 4], [0, 0, 6]),              # a batched entry overshot the limit
])
def test_blocks_at_the_limit_and_unblocks_below_half(steps, expected_rooms):
    limit = unacked_limit.UnackedLimit(LIMIT)
    assert [limit.room(unacked) for unacked in steps] == expected_rooms


def test_no_limit_never_blocks_and_removing_it_unblocks():
    limit = unacked_limit.UnackedLimit(LIMIT)
    assert limit.room(LIMIT) == 0
    limit.max_unacked_messages = 0
    assert limit.room(10**6) is None
    assert not limit.blocked


@hypothesis.given(st.integers(1, 50), st.lists(st.integers(0, 100), max_size=40))
def test_matches_a_simple_model(max_unacked, counts):
    limit = unacked_limit.UnackedLimit(max_unacked)
    blocked = False
    for unacked in counts:
        if unacked >= max_unacked:
            blocked = True
        elif blocked and unacked < max_unacked // 2:
            blocked = False
        assert limit.room(unacked) == (0 if blocked else max_unacked - unacked)


@pytest.mark.parametrize(("broker", "namespace_value", "topic_value", "expected"), [
    (200_000, None, None, 200_000),
    (200_000, 7, None, 7),
    (200_000, 7, 3, 3),
    (200_000, 0, None, 0),
])
def test_the_topic_policy_wins_over_the_namespace_over_the_broker(
        broker, namespace_value, topic_value, expected):
    conf = broker_config.BrokerConfig(max_unacked_messages_per_subscription=broker)
    stored = ({} if namespace_value is None
              else {"max_unacked_messages_per_subscription": namespace_value})
    topic = {} if topic_value is None else {"maxUnackedMessagesOnSubscription": topic_value}
    merged = policies.with_topic_overrides(stored, topic)
    assert policies.resolve(merged, conf, LEDGER).limits.max_unacked_per_subscription == expected


# -- on the official client ---------------------------------------------------------------


@pytest.mark.parametrize("consumer_type", [pulsar.ConsumerType.Shared,
                                           pulsar.ConsumerType.KeyShared])
def test_dispatch_stops_at_the_limit_and_resumes_below_half(client, admin, namespace,
                                                            consumer_type):
    admin.set_policy(namespace, "maxUnackedMessagesPerSubscription", LIMIT)
    topic = f"persistent://{namespace}/unacked-{consumer_type}"
    consumer = client.subscribe(topic, "sub", consumer_type=consumer_type,
                                receiver_queue_size=1000)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(30):
        producer.send(f"m{i}".encode())

    held = receive_all(consumer, LIMIT, ack=False)
    assert nothing_more(consumer, 1_000)
    unacked = lambda: admin.stats(topic)["subscriptions"]["sub"]["unackedMessages"]
    assert unacked() == LIMIT

    # Down to half the limit: still blocked.
    for message in held[:LIMIT // 2]:
        consumer.acknowledge(message)
    wait_until(lambda: unacked() == LIMIT - LIMIT // 2, 10, "acks counted")
    assert nothing_more(consumer, 1_000)

    # Below half: dispatch resumes, up to the limit again.
    consumer.acknowledge(held[LIMIT // 2])
    more = receive_all(consumer, LIMIT - (LIMIT - LIMIT // 2 - 1), ack=False)
    assert nothing_more(consumer, 1_000)
    assert [m.data() for m in held + more] == [f"m{i}".encode() for i in range(LIMIT + len(more))]
    producer.close()
    consumer.close()


def test_the_limit_holds_for_all_consumers_of_the_subscription_together(client, admin,
                                                                        namespace):
    admin.set_policy(namespace, "maxUnackedMessagesPerSubscription", LIMIT)
    topic = f"persistent://{namespace}/unacked-together"
    consumers = [client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                  receiver_queue_size=1000) for _ in range(2)]
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(30):
        producer.send(f"m{i}".encode())
    wait_until(lambda: admin.stats(topic)["subscriptions"]["sub"]["unackedMessages"] == LIMIT,
               10, "the subscription at its limit")
    wait_until(lambda: sum(c["unackedMessages"] for c in
                           admin.stats(topic)["subscriptions"]["sub"]["consumers"]) == LIMIT,
               10, "the consumers at the subscription's limit")
    assert admin.stats(topic)["subscriptions"]["sub"]["msgBacklog"] == 30
    producer.close()
    for consumer in consumers:
        consumer.close()
