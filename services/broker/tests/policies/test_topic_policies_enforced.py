"""Topic-level autoSubscriptionCreation, persistence and backlog quotas change what the broker
does for that topic only, over its namespace's, seen through the official client."""

from __future__ import annotations

import json

import pulsar
import pytest
from pulsar_common.testing import wait_until

#: What the official client raises for a refused subscription: the C++ client retries
#: SubscriptionNotFound until its operation timeout (see test_auto_subscription_creation.py).
REFUSED = (pulsar.SubscriptionNotFound, pulsar.Timeout)
PAYLOAD = b"x" * 100
#: Twenty 100-byte messages are well over this.
QUOTA_BYTES = 1000



def test_a_topic_without_auto_subscription_creation_refuses_a_new_subscription(
        quick_client, admin, namespace):
    admin.set_policy(namespace, "autoSubscriptionCreation",
                     {"allowAutoSubscriptionCreation": True})
    closed, open_ = f"persistent://{namespace}/closed", f"persistent://{namespace}/open"
    admin.ok("POST", admin.topic_policy_path(closed, "autoSubscriptionCreation"),
             {"allowAutoSubscriptionCreation": False})
    with pytest.raises(REFUSED):
        quick_client.subscribe(closed, "new-one")
    quick_client.subscribe(open_, "new-one").close()  # the namespace still allows it
    admin.ok("DELETE", admin.topic_policy_path(closed, "autoSubscriptionCreation"))
    quick_client.subscribe(closed, "new-one").close()


@pytest.mark.parametrize("created_by", ["producer", "admin"])
def test_a_topic_persistence_policy_wins_over_the_namespace(client, admin, namespace,
                                                            created_by):
    # The standalone has one bookie: the namespace's 2/2/2 cannot be placed, the topic's 1/1/1
    # can, and shows in its ledger's metadata, from the first ledger on, whether a client or
    # `PUT .../{topic}` creates the topic.
    admin.set_policy(namespace, "persistence", {
        "bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 2,
        "managedLedgerMaxMarkDeleteRate": 0})
    topic = f"persistent://{namespace}/own-quorums-{created_by}"
    admin.ok("POST", admin.topic_policy_path(topic, "persistence"), {
        "bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1,
        "managedLedgerMaxMarkDeleteRate": 0})
    if created_by == "admin":
        admin.ok("PUT", f"/admin/v2/{topic.replace('://', '/')}")
    client.create_producer(topic).send(b"x")
    ledgers = admin.internal_stats(topic, metadata=True)["ledgers"]
    quorums = {(m["ensembleSize"], m["writeQuorumSize"], m["ackQuorumSize"])
               for m in (json.loads(ledger["metadata"]) for ledger in ledgers)}
    assert quorums == {(1, 1, 1)}


def test_a_topic_backlog_quota_refuses_producers_of_that_topic_only(client, admin, namespace):
    topic, other = f"persistent://{namespace}/quota", f"persistent://{namespace}/no-quota"
    for name in (topic, other):
        admin.create_subscription(name, "slow")
        producer = client.create_producer(name, batching_enabled=False)
        for _ in range(20):
            producer.send(PAYLOAD)
    # The quota comes once both backlogs are there: set before, the periodic check could
    # fall between two sends and refuse the producer half way.
    admin.ok("POST", admin.topic_policy_path(topic, "backlogQuota"),
             {"limitSize": QUOTA_BYTES, "policy": "producer_exception"})
    wait_until(lambda: not admin.stats(topic)["publishers"], 30, "producer disconnected")
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
        client.create_producer(topic)
    client.create_producer(other).send(PAYLOAD)
    admin.ok("DELETE", admin.topic_policy_path(topic, "backlogQuota"))
    client.create_producer(topic).send(PAYLOAD)
