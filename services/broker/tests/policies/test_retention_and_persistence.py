"""Namespace retention and persistence policies reach the topics' managed ledgers."""

from __future__ import annotations

import json
import uuid

import pulsar
from pulsar_common.testing import wait_until

#: The node rolls ledgers over every managedLedgerMaxEntriesPerLedger (5) entries.
ENTRIES_PER_LEDGER = 5
MESSAGES = 4 * ENTRIES_PER_LEDGER


def _produce_and_consume_all(client: pulsar.Client, topic: str) -> None:
    consumer = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(MESSAGES):
        producer.send(b"m%d" % i)
    for _ in range(MESSAGES):
        consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    producer.close()
    consumer.close()


def _all_acknowledged(admin, topic: str) -> bool:
    stats = admin.internal_stats(topic)
    return bool(stats["cursors"]["sub"]["markDeletePosition"] == stats["lastConfirmedEntry"])


def _ledger_count(admin, topic: str) -> int:
    return len(admin.internal_stats(topic)["ledgers"])


def test_without_retention_consumed_ledgers_are_trimmed(client, admin, namespace):
    topic = f"persistent://{namespace}/no-retention"
    _produce_and_consume_all(client, topic)
    # Only the current ledger (the last ENTRIES_PER_LEDGER messages) stays.
    wait_until(lambda: _ledger_count(admin, topic) == 1, 30, "consumed ledgers trimmed")


def test_retention_keeps_consumed_ledgers_until_the_policy_is_removed(client, admin, namespace):
    admin.set_policy(namespace, "retention",
                     {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100})
    topic = f"persistent://{namespace}/retained"
    _produce_and_consume_all(client, topic)
    wait_until(lambda: _all_acknowledged(admin, topic), 30, "every message acknowledged")
    stats = admin.internal_stats(topic)
    assert len(stats["ledgers"]) == MESSAGES // ENTRIES_PER_LEDGER
    assert stats["numberOfEntries"] == MESSAGES
    # Removing the policy applies to the loaded topic: the broker default (no retention).
    admin.ok("DELETE", f"/admin/v2/namespaces/{namespace}/retention")
    wait_until(lambda: _ledger_count(admin, topic) == 1, 30, "consumed ledgers trimmed")


def test_retention_set_on_a_loaded_topic_keeps_what_is_consumed_after(client, admin, namespace):
    topic = f"persistent://{namespace}/later"
    admin.ok("PUT", f"/admin/v2/{topic.replace('://', '/')}")
    admin.set_policy(namespace, "retention", {"retentionTimeInMinutes": -1,
                                              "retentionSizeInMB": -1})
    _produce_and_consume_all(client, topic)
    wait_until(lambda: _all_acknowledged(admin, topic), 30, "every message acknowledged")
    assert admin.internal_stats(topic)["numberOfEntries"] == MESSAGES


def _ledger_quorums(admin, topic: str) -> list[tuple[int, int, int]]:
    found = []
    for ledger in admin.internal_stats(topic, metadata=True)["ledgers"]:
        metadata = json.loads(ledger["metadata"])
        found.append((metadata["ensembleSize"], metadata["writeQuorumSize"],
                      metadata["ackQuorumSize"]))
    return found


def test_persistence_policy_chooses_the_quorums_of_new_ledgers(client, admin, namespace):
    # The standalone has one bookie: 2/2/2 cannot be placed, so the topic cannot start a
    # ledger, and says why; 1/1/1 works and shows in the ledgers' metadata.
    admin.set_policy(namespace, "persistence", {
        "bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 2,
        "managedLedgerMaxMarkDeleteRate": 0})
    topic = f"persistent://{namespace}/t-{uuid.uuid4().hex[:6]}"
    status, answer = admin.call("PUT", f"/admin/v2/{topic.replace('://', '/')}/subscription/s")
    assert status >= 500 and "2/2/2" in answer["reason"], (status, answer)
    admin.set_policy(namespace, "persistence", {
        "bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1,
        "managedLedgerMaxMarkDeleteRate": 2.0})
    producer = client.create_producer(topic)
    producer.send(b"x")
    assert _ledger_quorums(admin, topic) == [(1, 1, 1)]


def test_impossible_persistence_policies_are_refused(admin, namespace):
    path = f"/admin/v2/namespaces/{namespace}/persistence"
    ack_above_write = {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 1,
                       "bookkeeperAckQuorum": 2}
    status, answer = admin.call("POST", path, ack_above_write)
    assert status == 400 and "AckQuorum" in answer["reason"]
    above_max = {"bookkeeperEnsemble": 4, "bookkeeperWriteQuorum": 1, "bookkeeperAckQuorum": 1}
    status, answer = admin.call("POST", path, above_max)
    assert status == 400 and "Bookkeeper-Ensemble must be <= 3" in answer["reason"]
    assert admin.call("GET", path)[0] == 204


def test_a_single_zero_retention_limit_is_refused(admin, namespace):
    status, answer = admin.call("POST", f"/admin/v2/namespaces/{namespace}/retention",
                                {"retentionTimeInMinutes": 60, "retentionSizeInMB": 0})
    assert status == 400 and "use -1" in answer["reason"]
