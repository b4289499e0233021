"""Message TTL and backlog quotas of a namespace, seen through the official client."""

from __future__ import annotations

import pulsar
import pytest
from pulsar_common.testing import wait_until

PAYLOAD = b"x" * 100
#: Twenty 100-byte messages are well over this; a few are under it.
QUOTA_BYTES = 1000


def _backlog(admin, topic: str, subscription: str) -> int:
    return int(admin.stats(topic)["subscriptions"][subscription]["msgBacklog"])


def test_ttl_acknowledges_old_messages_without_consumers(client, admin, namespace):
    topic = f"persistent://{namespace}/ttl"
    admin.create_subscription(topic, "idle")
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(5):
        producer.send(PAYLOAD)
    assert _backlog(admin, topic, "idle") == 5
    # Set on the loaded topic: the change applies to it.
    admin.set_policy(namespace, "messageTTL", 1)
    wait_until(lambda: _backlog(admin, topic, "idle") == 0, 30, "messages expired")
    # What is newer than the TTL is left alone until it is old enough.
    producer.send(PAYLOAD)
    assert _backlog(admin, topic, "idle") == 1
    wait_until(lambda: _backlog(admin, topic, "idle") == 0, 30, "the new message expired")


def _refused(client, topic: str, refusal: type[Exception]) -> bool:
    """Whether a new producer on topic is refused with refusal (a policy set through the
    REST API reaches the loaded topic a moment later)."""
    try:
        client.create_producer(topic).close()
    except refusal:
        return True
    return False


def _fill_backlog(client, admin, topic: str) -> pulsar.Producer:
    producer = client.create_producer(topic, batching_enabled=False, send_timeout_millis=20_000)
    for _ in range(20):
        producer.send(PAYLOAD)
    assert admin.stats(topic)["backlogSize"] > QUOTA_BYTES
    return producer


@pytest.mark.parametrize("policy, refusal", [
    ("producer_exception", pulsar.ProducerBlockedQuotaExceededException),
    ("producer_request_hold", pulsar.ProducerBlockedQuotaExceededError),
])
def test_a_topic_over_its_backlog_quota_refuses_producers(client, admin, namespace, policy,
                                                          refusal):
    topic = f"persistent://{namespace}/quota"
    # The consumer shares the client's connection with the producers: it must survive.
    consumer = client.subscribe(topic, "slow", consumer_type=pulsar.ConsumerType.Shared)
    producer = _fill_backlog(client, admin, topic)
    # The quota comes once the backlog is there: set before, the periodic check could fall
    # between two sends of the fill and refuse the producer half way.
    admin.ok("POST", f"/admin/v2/namespaces/{namespace}/backlogQuota",
             {"limitSize": QUOTA_BYTES, "policy": policy})
    wait_until(lambda: _refused(client, topic, refusal), 30, "new producers refused")
    # The periodic check disconnects the producer already there; it cannot come back.
    wait_until(lambda: not admin.stats(topic)["publishers"], 30, "producer disconnected")
    if policy == "producer_exception":
        # Apache's client fails the sends of a producer refused that way.
        with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
            producer.send(PAYLOAD)
    for _ in range(20):
        consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    wait_until(lambda: admin.stats(topic)["backlogSize"] == 0, 30, "backlog consumed")
    client.create_producer(topic).send(PAYLOAD)
    # The refused producer kept trying in the background and is back.
    producer.send(PAYLOAD)


def test_backlog_eviction_moves_the_slowest_subscription_forward(client, admin, namespace):
    topic = f"persistent://{namespace}/evict"
    admin.create_subscription(topic, "slow")
    admin.create_subscription(topic, "slower")
    producer = _fill_backlog(client, admin, topic)
    # Set once the backlog is there, so no eviction runs in the middle of the fill.
    admin.ok("POST", f"/admin/v2/namespaces/{namespace}/backlogQuota",
             {"limitSize": QUOTA_BYTES, "policy": "consumer_backlog_eviction"})
    wait_until(lambda: admin.stats(topic)["backlogSize"] <= 0.9 * QUOTA_BYTES, 30,
               "backlog evicted")
    assert 0 < _backlog(admin, topic, "slow") < 20
    assert 0 < _backlog(admin, topic, "slower") < 20
    # Producers are not blocked by this policy.
    producer.send(PAYLOAD)
    client.create_producer(topic).send(PAYLOAD)


def test_a_message_age_quota_with_eviction_expires_old_messages(client, admin, namespace):
    admin.ok("POST", f"/admin/v2/namespaces/{namespace}/backlogQuota?backlogQuotaType=message_age",
             {"limitTime": 1, "policy": "consumer_backlog_eviction"})
    topic = f"persistent://{namespace}/age"
    admin.create_subscription(topic, "idle")
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(5):
        producer.send(PAYLOAD)
    wait_until(lambda: _backlog(admin, topic, "idle") == 0, 30, "old messages evicted")


def test_backlog_quota_policies_are_checked_when_set(admin, namespace):
    path = f"/admin/v2/namespaces/{namespace}/backlogQuota"
    status, answer = admin.call("POST", path, {"limitSize": 10, "policy": "drop_everything"})
    assert status == 400 and "consumer_backlog_eviction" in answer["reason"]
    assert admin.ok("GET", f"/admin/v2/namespaces/{namespace}/backlogQuotaMap") == {}
