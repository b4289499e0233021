"""`pulsar-admin brokers ...-dynamic-config`, `resource-quotas`, `ns-isolation-policy`, the
topic-level rate policies and the stats flags, run as processes against the standalone."""

from __future__ import annotations

import json

import pulsar


def test_dynamic_configuration_commands(admin) -> None:
    names = admin.ok("brokers", "list-dynamic-config").splitlines()
    assert "dispatchThrottlingRatePerTopicInMsg" in names
    try:
        admin.ok("brokers", "update-dynamic-config", "--config",
                 "dispatchThrottlingRatePerSubscriptionInByte", "--value", "1000000")
        assert json.loads(admin.ok("brokers", "get-all-dynamic-config")) == {
            "dispatchThrottlingRatePerSubscriptionInByte": "1000000"}
        runtime = json.loads(admin.ok("brokers", "get-runtime-config"))
        assert runtime["dispatchThrottlingRatePerSubscriptionInByte"] == "1000000"
    finally:
        admin.ok("brokers", "delete-dynamic-config", "--config",
                 "dispatchThrottlingRatePerSubscriptionInByte")
    assert json.loads(admin.ok("brokers", "get-all-dynamic-config")) == {}
    refused = admin("brokers", "update-dynamic-config", "--config", "clusterName",
                    "--value", "x")
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[0] == "Can't update non-dynamic configuration"


def test_resource_quota_commands(admin, unique: str) -> None:
    ns = f"public/quotas-{unique}"
    admin.ok("namespaces", "create", ns, "--bundles", "1")
    bundle = ("-n", ns, "-b", "0x00000000_0xffffffff")
    default = json.loads(admin.ok("resource-quotas", "get"))
    assert default["msgRateIn"] > 0 and set(default) == {
        "msgRateIn", "msgRateOut", "bandwidthIn", "bandwidthOut", "memory", "dynamic"}
    admin.ok("resource-quotas", "set", *bundle, "-mi", "10", "-mo", "20", "-bi", "100",
             "-bo", "200", "-mem", "30", "-d")
    assert json.loads(admin.ok("resource-quotas", "get", *bundle)) == {
        "msgRateIn": 10.0, "msgRateOut": 20.0, "bandwidthIn": 100.0, "bandwidthOut": 200.0,
        "memory": 30.0, "dynamic": True}
    admin.ok("resource-quotas", "reset-namespace-bundle-quota", *bundle)
    assert json.loads(admin.ok("resource-quotas", "get", *bundle)) == default
    alone = admin("resource-quotas", "get", "-n", ns)
    assert alone.returncode == 1
    assert "namespace and bundle must be provided together." in alone.stderr


def test_ns_isolation_policy_commands(admin, unique: str) -> None:
    policy = f"iso-{unique}"
    admin.ok("ns-isolation-policy", "set", "standalone", policy, "--namespaces",
             f"public/iso-{unique}.*", "--primary", "127.0.0.1:.*", "--secondary", "",
             "--auto-failover-policy-type", "min_available",
             "--auto-failover-policy-params", "min_limit=1,usage_threshold=80")
    try:
        data = json.loads(admin.ok("ns-isolation-policy", "get", "standalone", policy))
        assert data == {"namespaces": [f"public/iso-{unique}.*"], "primary": ["127.0.0.1:.*"],
                        "secondary": [], "auto_failover_policy": {
                            "policy_type": "min_available",
                            "parameters": {"min_limit": "1", "usage_threshold": "80"}}}
        assert policy in json.loads(admin.ok("ns-isolation-policy", "list", "standalone"))
        brokers = json.loads(admin.ok("ns-isolation-policy", "brokers", "standalone"))
        assert brokers[0]["policyName"] == policy and brokers[0]["primary"] is True
        one = json.loads(admin.ok("ns-isolation-policy", "broker", "standalone", "--broker",
                                  brokers[0]["brokerName"]))
        assert one == brokers[0]
    finally:
        admin.ok("ns-isolation-policy", "delete", "standalone", policy)
    missing = admin("ns-isolation-policy", "get", "standalone", policy)
    assert missing.returncode == 1 and "Cannot find NamespaceIsolationPolicy" in missing.stderr
    bad = admin("ns-isolation-policy", "set", "standalone", policy, "--namespaces", "a/b",
                "--primary", "x", "--auto-failover-policy-type", "min_available",
                "--auto-failover-policy-params", "min_limit=1")
    assert bad.returncode == 1 and "Unknown auto failover policy params" in bad.stderr


def test_topic_rate_policies_and_stats_flags(admin, client: pulsar.Client,
                                             unique: str) -> None:
    topic = f"persistent://public/default/cli-rates-{unique}"
    admin.ok("topics", "create", topic)
    admin.ok("topicPolicies", "set-dispatch-rate", topic, "-md", "100", "-dt", "2")
    assert json.loads(admin.ok("topicPolicies", "get-dispatch-rate", topic)) == {
        "dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1,
        "ratePeriodInSecond": 2, "relativeToPublishRate": False}
    admin.ok("topicPolicies", "set-subscribe-rate", topic, "-sr", "5")
    assert json.loads(admin.ok("topicPolicies", "get-subscribe-rate", topic)) == {
        "subscribeThrottlingRatePerConsumer": 5, "ratePeriodInSecond": 30}
    admin.ok("topicPolicies", "remove-dispatch-rate", topic)
    admin.ok("topicPolicies", "remove-subscribe-rate", topic)
    assert admin.ok("topicPolicies", "get-dispatch-rate", topic) == ""
    admin.ok("topics", "create-subscription", topic, "-s", "sub")
    producer = client.create_producer(topic)
    producer.send(b"hello")
    stats = json.loads(admin.ok("topics", "stats", topic, "-etb", "-sbs", "false", "-ep"))
    assert stats["subscriptions"]["sub"]["backlogSize"] == -1 and stats["publishers"] == []
    assert stats["subscriptions"]["sub"]["earliestMsgPublishTimeInBacklog"] > 0
    partitioned = f"persistent://public/default/cli-pstats-{unique}"
    admin.ok("topics", "create-partitioned-topic", partitioned, "-p", "2")
    client.create_producer(partitioned).close()  # loads both partitions
    totals = json.loads(admin.ok("topics", "partitioned-stats", partitioned, "--per-partition",
                                 "-gpb"))
    assert totals["metadata"] == {"partitions": 2} and len(totals["partitions"]) == 2
    producer.close()
