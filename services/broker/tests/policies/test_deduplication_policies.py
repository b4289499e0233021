"""Deduplication decided per topic: a topic's deduplicationEnabled wins over its namespace's
(and that over brokerDeduplicationEnabled), and a change reaches loaded topics at once, as
Apache's broker checks the deduplication status on every policy change; switching it off
deletes the `pulsar.dedup` cursor so it holds no ledgers back."""

from __future__ import annotations

from pulsar_common.testing import wait_until

DEDUP_CURSOR = "pulsar.dedup"


def _send_twice(producer, sequence_id: int) -> tuple[int, int]:
    """The receipt of a resend (the wheel ignores sequence_id=0: ids here are above it)."""
    producer.send(b"m%d" % sequence_id, sequence_id=sequence_id)
    again = producer.send(b"m%d again" % sequence_id, sequence_id=sequence_id)
    return again.ledger_id(), again.entry_id()


def test_a_topic_policy_turns_deduplication_on_for_that_topic_only(client, admin, namespace):
    own, other = f"persistent://{namespace}/dedup-own", f"persistent://{namespace}/dedup-other"
    admin.ok("POST", admin.topic_policy_path(own, "deduplicationEnabled"), True)
    producer = client.create_producer(own, producer_name="p", batching_enabled=False)
    assert _send_twice(producer, 10) == (-1, -1)
    producer.close()
    producer = client.create_producer(other, producer_name="p", batching_enabled=False)
    assert _send_twice(producer, 10) != (-1, -1)
    producer.close()


def test_a_namespace_change_switches_loaded_topics_at_once(client, admin, namespace):
    topic = f"persistent://{namespace}/dedup-switched"
    producer = client.create_producer(topic, producer_name="p", batching_enabled=False)
    assert _send_twice(producer, 10) != (-1, -1)
    cursors = lambda: admin.internal_stats(topic)["cursors"]

    admin.set_policy(namespace, "deduplication", True)
    wait_until(lambda: DEDUP_CURSOR in cursors(), 10, "deduplication switched on")
    assert _send_twice(producer, 20) == (-1, -1)

    admin.set_policy(namespace, "deduplication", False)
    wait_until(lambda: DEDUP_CURSOR not in cursors(), 10, "deduplication switched off")
    assert _send_twice(producer, 30) != (-1, -1)
    producer.close()
