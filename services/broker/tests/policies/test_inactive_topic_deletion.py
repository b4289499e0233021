"""Inactive-topic deletion: brokerDeleteInactiveTopics* of broker.conf and a namespace's
inactiveTopicPolicies. A topic with no producer and no consumer for longer than the
policy's duration is deleted by the broker's periodic check, with no subscription
(delete_when_no_subscriptions) or with every subscription caught up
(delete_when_subscriptions_caught_up), as Apache's broker does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pulsar_broker import config as broker_config
from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.topics import inactive_topics, policies
from pulsar_common.testing import wait_until

NO_SUBSCRIPTIONS = inactive_topics.NO_SUBSCRIPTIONS
CAUGHT_UP = inactive_topics.SUBSCRIPTIONS_CAUGHT_UP
#: The standalone below deletes topics inactive for this long, looking every second.
MAX_INACTIVE_S = 2


@pytest.fixture(scope="module")
def standalone(
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.StandaloneProcess]:
    node = broker_testing.StandaloneProcess(tmp_path_factory.mktemp("inactive") / "data", {
        "journalSyncData": "false",
        "brokerDeleteInactiveTopicsEnabled": "true",
        "brokerDeleteInactiveTopicsFrequencySeconds": "1",
        "brokerDeleteInactiveTopicsMaxInactiveDurationSeconds": str(MAX_INACTIVE_S),
    })
    node.start()
    yield node
    node.stop()


# -- the pure decision ---------------------------------------------------------------------


def _seen(producers=0, consumers=0, subscriptions=0, with_backlog=0):
    return inactive_topics.TopicActivity(producers, consumers, subscriptions, with_backlog)


@pytest.mark.parametrize(("activity", "mode", "active"), [
    (_seen(), NO_SUBSCRIPTIONS, False),
    (_seen(producers=1), NO_SUBSCRIPTIONS, True),
    (_seen(consumers=1, subscriptions=1), CAUGHT_UP, True),
    (_seen(subscriptions=2), NO_SUBSCRIPTIONS, True),
    (_seen(subscriptions=2), CAUGHT_UP, False),
    (_seen(subscriptions=2, with_backlog=1), CAUGHT_UP, True),
])
def test_what_counts_as_active_by_mode(activity, mode, active):
    assert inactive_topics.is_active(activity, mode) is active


def test_a_topic_is_deleted_only_after_the_whole_duration_inactive():
    clock = inactive_topics.InactivityClock()
    policy = inactive_topics.InactiveTopicPolicy(True, NO_SUBSCRIPTIONS, 60)
    assert not clock.should_delete("t", policy, _seen(), 0)
    assert not clock.should_delete("t", policy, _seen(), 59_999)
    assert not clock.should_delete("t", policy, _seen(producers=1), 60_000)  # active again
    assert not clock.should_delete("t", policy, _seen(), 61_000)
    assert clock.should_delete("t", policy, _seen(), 121_000)
    off = inactive_topics.InactiveTopicPolicy(False, NO_SUBSCRIPTIONS, 60)
    assert not clock.should_delete("t", off, _seen(), 10**9)


def test_the_namespace_policy_wins_over_the_broker_settings():
    conf = broker_config.BrokerConfig(broker_delete_inactive_topics_enabled=True,
                                      broker_delete_inactive_topics_frequency_seconds=30)
    ledger = ml_config.ManagedLedgerConfig()
    assert policies.resolve(None, conf, ledger).inactive == inactive_topics.InactiveTopicPolicy(
        True, NO_SUBSCRIPTIONS, 30)
    stored = {"inactive_topic_policies": {"deleteWhileInactive": False,
                                          "inactiveTopicDeleteMode": CAUGHT_UP,
                                          "maxInactiveDurationSeconds": 5}}
    assert policies.resolve(stored, conf, ledger).inactive == inactive_topics.InactiveTopicPolicy(
        False, CAUGHT_UP, 5)
    topic = {"inactiveTopicPolicies": {"deleteWhileInactive": True,
                                       "inactiveTopicDeleteMode": NO_SUBSCRIPTIONS,
                                       "maxInactiveDurationSeconds": 7}}
    merged = policies.with_topic_overrides(stored, topic)
    assert policies.resolve(merged, conf, ledger).inactive.max_inactive_s == 7


def test_the_broker_default_is_off_here():
    assert broker_config.BrokerConfig().broker_delete_inactive_topics_enabled is False


# -- on a standalone, with the official client ------------------------------------------


def _topics(admin, namespace):
    return set(admin.ok("GET", f"/admin/v2/namespaces/{namespace}/topics"))


def _wait_until_gone(admin, namespace, topic, timeout_s=30.0):
    wait_until(lambda: topic not in _topics(admin, namespace), timeout_s, f"{topic} deleted")


def test_a_topic_without_subscriptions_is_deleted_one_with_a_subscription_is_kept(
        client, admin, namespace):
    gone = f"persistent://{namespace}/left-alone"
    kept = f"persistent://{namespace}/subscribed"
    client.create_producer(gone).close()
    client.subscribe(kept, "s").close()
    client.create_producer(kept).close()
    # `gone` existed (its producer was created); it may already be deleted by now.
    assert kept in _topics(admin, namespace)
    _wait_until_gone(admin, namespace, gone)
    assert kept in _topics(admin, namespace)


def test_a_topic_with_a_producer_is_not_deleted(client, admin, namespace):
    busy = f"persistent://{namespace}/busy"
    idle = f"persistent://{namespace}/idle"
    producer = client.create_producer(busy)
    client.create_producer(idle).close()
    _wait_until_gone(admin, namespace, idle)
    # The idle topic outlived the duration while the producer stayed: the busy one is kept.
    assert busy in _topics(admin, namespace)
    producer.send(b"still here")
    producer.close()


def test_caught_up_mode_deletes_topics_whose_subscriptions_have_no_backlog(
        client, admin, namespace):
    admin.set_policy(namespace, "inactiveTopicPolicies", {
        "deleteWhileInactive": True, "inactiveTopicDeleteMode": CAUGHT_UP,
        "maxInactiveDurationSeconds": MAX_INACTIVE_S})
    caught_up = f"persistent://{namespace}/caught-up"
    behind = f"persistent://{namespace}/behind"
    for topic in (caught_up, behind):
        client.subscribe(topic, "s").close()
        producer = client.create_producer(topic)
        producer.send(b"m")
        producer.close()
    consumer = client.subscribe(caught_up, "s")
    consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    consumer.close()
    _wait_until_gone(admin, namespace, caught_up)
    assert behind in _topics(admin, namespace)


def test_a_namespace_policy_keeps_its_topics_when_the_broker_would_delete_them(
        client, admin, namespace):
    admin.set_policy(namespace, "inactiveTopicPolicies", {
        "deleteWhileInactive": False, "inactiveTopicDeleteMode": NO_SUBSCRIPTIONS,
        "maxInactiveDurationSeconds": MAX_INACTIVE_S})
    other = f"public/inactive-{namespace.rsplit('-', 1)[1]}"
    admin.ok("PUT", f"/admin/v2/namespaces/{other}")
    kept = f"persistent://{namespace}/protected"
    gone = f"persistent://{other}/unprotected"
    client.create_producer(kept).close()
    client.create_producer(gone).close()
    _wait_until_gone(admin, other, gone)
    assert kept in _topics(admin, namespace)
