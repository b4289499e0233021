"""Topic-level policies beyond the limits and rates: deduplicationEnabled, persistence,
delayedDelivery, backlog quotas, maxUnackedMessagesOnSubscription, inactiveTopicPolicies and
autoSubscriptionCreation, with Apache's REST paths and bodies, and `applied=true`: the value in
force, the topic's, else the namespace's, else the broker's default."""

from __future__ import annotations

import json

import pytest

from .test_topic_policies import topic_admin

QUOTA = {"limitSize": 10 * 1024 * 1024, "limitTime": -1, "policy": "producer_exception"}


def _path(namespace: str, topic: str, policy: str) -> str:
    return f"/admin/v2/persistent/{namespace}/{topic}/{policy}"


@pytest.mark.parametrize(("policy", "value"), [
    ("deduplicationEnabled", True),
    ("persistence", {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1,
                     "bookkeeperAckQuorum": 1, "managedLedgerMaxMarkDeleteRate": 2.0}),
    ("delayedDelivery", {"active": False, "tickTime": 500, "maxDeliveryDelayInMillis": 0}),
    ("maxUnackedMessagesOnSubscription", 7),
    ("inactiveTopicPolicies", {"inactiveTopicDeleteMode": "delete_when_subscriptions_caught_up",
                               "maxInactiveDurationSeconds": 30, "deleteWhileInactive": True}),
    ("autoSubscriptionCreation", {"allowAutoSubscriptionCreation": False}),
])
def test_a_topic_policy_is_set_read_and_removed(admin, namespace, policy, value):
    path = _path(namespace, "t", policy)
    assert admin.call("GET", path) == (204, None)
    admin.ok("POST", path, value)
    assert admin.call("GET", path) == (200, value)
    admin.ok("DELETE", path)
    assert admin.call("GET", path) == (204, None)


@pytest.mark.parametrize(("policy", "body", "status"), [
    ("deduplicationEnabled", "yes", 400),
    ("persistence", {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 2,
                     "bookkeeperAckQuorum": 1}, 400),
    ("persistence", {"bookkeeperEnsemble": 9, "bookkeeperWriteQuorum": 1,
                     "bookkeeperAckQuorum": 1}, 400),
    ("delayedDelivery", {"active": True, "tickTime": 0}, 400),
    ("maxUnackedMessagesOnSubscription", -1, 412),
    ("inactiveTopicPolicies", {"deleteWhileInactive": True, "inactiveTopicDeleteMode": "never"},
     400),
    ("autoSubscriptionCreation", {}, 400),
])
def test_bad_topic_policies_are_refused(admin, namespace, policy, body, status):
    assert admin.call("POST", _path(namespace, "t", policy), body)[0] == status


def test_backlog_quotas_are_kept_per_type(admin, namespace):
    quota_map = _path(namespace, "t", "backlogQuotaMap")
    assert admin.call("GET", quota_map) == (200, {})
    admin.ok("POST", _path(namespace, "t", "backlogQuota"), QUOTA)
    age = {"limitSize": -1, "limitTime": 60, "policy": "consumer_backlog_eviction"}
    admin.ok("POST", _path(namespace, "t", "backlogQuota") + "?backlogQuotaType=message_age", age)
    assert admin.ok("GET", quota_map) == {"destination_storage": QUOTA, "message_age": age}
    admin.ok("DELETE", _path(namespace, "t", "backlogQuota"))
    assert admin.ok("GET", quota_map) == {"message_age": age}
    bad = _path(namespace, "t", "backlogQuota") + "?backlogQuotaType=nonsense"
    assert admin.call("POST", bad, QUOTA)[0] == 400


def test_applied_answers_the_topic_then_the_namespace_then_the_broker(admin, namespace):
    ttl = _path(namespace, "t", "messageTTL")
    assert admin.call("GET", ttl + "?applied=true") == (200, 0)  # ttlDurationDefaultInSeconds
    admin.set_policy(namespace, "messageTTL", 30)
    assert admin.call("GET", ttl) == (204, None)
    assert admin.ok("GET", ttl + "?applied=true") == 30
    admin.ok("POST", ttl + "?messageTTL=90")
    assert admin.ok("GET", ttl + "?applied=true") == 90

    dedup = _path(namespace, "t", "deduplicationEnabled") + "?applied=true"
    assert admin.ok("GET", dedup) is False  # brokerDeduplicationEnabled
    admin.set_policy(namespace, "deduplication", True)
    assert admin.ok("GET", dedup) is True

    auto = _path(namespace, "t", "autoSubscriptionCreation") + "?applied=true"
    assert admin.ok("GET", auto) == {"allowAutoSubscriptionCreation": True}

    delayed = admin.ok("GET", _path(namespace, "t", "delayedDelivery") + "?applied=true")
    assert delayed["active"] is True and delayed["tickTime"] > 0

    quotas = admin.ok("GET", _path(namespace, "t", "backlogQuotaMap") + "?applied=true")
    assert set(quotas) == {"destination_storage"}  # the broker's backlogQuotaDefault*
    admin.ok("POST", f"/admin/v2/namespaces/{namespace}/backlogQuota", QUOTA)
    assert admin.ok("GET", _path(namespace, "t", "backlogQuotaMap") + "?applied=true") == {
        "destination_storage": QUOTA}

    persistence = admin.ok("GET", _path(namespace, "t", "persistence") + "?applied=true")
    assert set(persistence) == {"bookkeeperEnsemble", "bookkeeperWriteQuorum",
                                "bookkeeperAckQuorum", "managedLedgerMaxMarkDeleteRate"}


def test_the_new_topic_policies_through_the_cli(standalone, namespace):
    topic, url = f"persistent://{namespace}/cli-more", standalone.web_url

    def run(*args: str) -> str:
        done = topic_admin(url, "topicPolicies", *args)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    run("set-deduplication", topic, "--enable")
    assert json.loads(run("get-deduplication", topic)) is True
    run("set-auto-subscription-creation", topic)
    assert json.loads(run("get-auto-subscription-creation", topic)) == {
        "allowAutoSubscriptionCreation": False}
    run("remove-auto-subscription-creation", topic)
    assert run("get-auto-subscription-creation", topic) == ""
    assert json.loads(run("get-auto-subscription-creation", topic, "-a")) == {
        "allowAutoSubscriptionCreation": True}
    run("set-delayed-delivery", topic, "-e", "-t", "2s")
    assert json.loads(run("get-delayed-delivery", topic)) == {
        "active": True, "tickTime": 2000, "maxDeliveryDelayInMillis": 0}
    run("set-persistence", topic, "-e", "1", "-w", "1", "-a", "1")
    assert json.loads(run("get-persistence", topic))["bookkeeperEnsemble"] == 1
    run("set-max-unacked-messages-per-subscription", topic, "-m", "5")
    assert json.loads(run("get-max-unacked-messages-per-subscription", topic)) == 5
    run("set-inactive-topic-policies", topic, "-e", "-t", "1m", "-m",
        "delete_when_no_subscriptions")
    assert json.loads(run("get-inactive-topic-policies", topic)) == {
        "inactiveTopicDeleteMode": "delete_when_no_subscriptions",
        "maxInactiveDurationSeconds": 60, "deleteWhileInactive": True}
    run("set-backlog-quota", topic, "-l", "10M", "-p", "producer_exception")
    assert json.loads(run("get-backlog-quota", topic)) == {"destination_storage": QUOTA}
    run("remove-backlog-quota", topic)
    assert json.loads(run("get-backlog-quota", topic)) == {}
    assert json.loads(run("get-message-ttl", topic, "-ap")) == 0
    both = topic_admin(url, "topicPolicies", "set-deduplication", topic, "-e", "-d")
    assert both.returncode != 0 and "--enable or --disable" in both.stderr


def test_a_topic_quota_of_one_type_leaves_the_namespace_quota_of_the_other():
    from pulsar_broker import config as broker_config
    from pulsar_broker.managed_ledger import config as ml_config
    from pulsar_broker.topics import policies

    age = {"limitSize": -1, "limitTime": 60, "policy": "consumer_backlog_eviction"}
    merged = policies.with_topic_overrides(
        {"backlog_quota_map": {"message_age": age},
         "delayed_delivery_policies": {"active": True, "tickTime": 300}},
        {"backLogQuotaMap": {"destination_storage": QUOTA}, "delayedDeliveryEnabled": False})
    resolved = policies.resolve(merged, broker_config.BrokerConfig(),
                                ml_config.ManagedLedgerConfig())
    assert resolved.storage_quota == policies.BacklogQuota(QUOTA["limitSize"], -1,
                                                           "producer_exception")
    assert resolved.age_quota == policies.BacklogQuota(-1, 60, "consumer_backlog_eviction")
    assert (resolved.delayed.enabled, resolved.delayed.tick_ms) == (False, 300)
