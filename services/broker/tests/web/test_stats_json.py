"""Stats values of topics and subscriptions rendered as Apache's JSON, field by field."""

from __future__ import annotations

import dataclasses
import json

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import SubType
from pulsar_broker.subscriptions.subscription_stats import ConsumerStats, SubscriptionStats
from pulsar_broker.topics.topic_stats import (
    CompactedLedgerStats,
    CompactionStats,
    CursorStats,
    InternalStats,
    NonPersistentSubscriptionStats,
    NonPersistentTopicStats,
    PublisherStats,
    TopicStats,
)
from pulsar_broker.web import stats_json

SUBSCRIPTION = SubscriptionStats(
    sub_type=SubType.KEY_SHARED, durable=True, backlog=7, delayed=2, unacked_messages=3,
    msg_out=40, bytes_out=4000, unreadable_entries_skipped=1,
    consumers=(ConsumerStats(consumer_name="c1", available_permits=997, unacked_messages=3,
                             msg_out=40, bytes_out=4000, address="127.0.0.1:5000",
                             priority_level=0),))

TOPIC = TopicStats(
    msg_in=10, bytes_in=1000, storage_size=2048, backlog_size=700,
    publishers=(PublisherStats(producer_id=4, producer_name="p", msg_in=10, bytes_in=1000,
                               address="127.0.0.1:5001"),),
    subscriptions={"s": SUBSCRIPTION}, deduplication=True,
    compaction=CompactionStats(removed_event_count=5, succeed_timestamp_ms=1700000000000,
                               failed_timestamp_ms=0, duration_ms=12))

INTERNAL = InternalStats(
    number_of_entries=12, total_size=2048, current_ledger_entries=2, current_ledger_size=200,
    last_confirmed_entry=ml.Position(8, 1), terminated=False,
    ledgers=(ml.LedgerInfo(ledger_id=3, entries=10, size=1848, timestamp_ms=1700000000000),
             ml.LedgerInfo(ledger_id=8, entries=2, size=200, timestamp_ms=0)),
    cursors={"s": CursorStats(
        mark_delete_position=ml.Position(3, 4), read_position=ml.Position(8, 2),
        individually_deleted_ranges=((ml.Position(3, 5), ml.Position(3, 7)),),
        entries_since_first_not_acked=6, properties={"k": 1})},
    compacted_ledger=CompactedLedgerStats(ledger_id=11, entries=4, size=400))


def test_a_subscription_renders_as_apaches_subscription_stats() -> None:
    assert json.dumps(stats_json.subscription(SUBSCRIPTION)) == json.dumps({
        "msgRateOut": 0.0, "msgThroughputOut": 0.0, "msgBacklog": 7, "backlogSize": 0,
        "msgBacklogNoDelayed": 5, "msgDelayed": 2, "unackedMessages": 3, "type": "Key_Shared",
        "msgOutCounter": 40, "bytesOutCounter": 4000, "isDurable": True,
        "unreadableEntriesSkipped": 1, "isReplicated": False,
        "consumers": [{"consumerName": "c1", "availablePermits": 997, "unackedMessages": 3,
                       "msgOutCounter": 40, "bytesOutCounter": 4000,
                       "address": "127.0.0.1:5000", "priorityLevel": 0}],
    })


def test_a_topic_renders_as_apaches_topic_stats_in_apaches_order() -> None:
    assert json.dumps(stats_json.topic(TOPIC)) == json.dumps({
        "msgRateIn": 0.0, "msgThroughputIn": 0.0, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
        "msgInCounter": 10, "bytesInCounter": 1000, "averageMsgSize": 100.0,
        "storageSize": 2048, "backlogSize": 700,
        "publishers": [{"producerId": 4, "producerName": "p", "msgInCounter": 10,
                        "bytesInCounter": 1000, "address": "127.0.0.1:5001"}],
        "subscriptions": {"s": stats_json.subscription(SUBSCRIPTION)},
        "replication": {}, "deduplicationStatus": "Enabled",
        "compaction": {"lastCompactionRemovedEventCount": 5,
                       "lastCompactionSucceedTimestamp": 1700000000000,
                       "lastCompactionFailedTimestamp": 0,
                       "lastCompactionDurationTimeInMills": 12},
    })


def test_a_topic_without_messages_or_compaction_has_no_average_and_no_compaction_field() -> None:
    rendered = stats_json.topic(dataclasses.replace(
        TOPIC, msg_in=0, bytes_in=0, deduplication=False, compaction=None))
    assert rendered["averageMsgSize"] == 0.0
    assert rendered["deduplicationStatus"] == "Disabled"
    assert "compaction" not in rendered


def test_internal_stats_render_as_apaches_persistent_topic_internal_stats() -> None:
    assert json.dumps(stats_json.internal(INTERNAL)) == json.dumps({
        "entriesAddedCounter": 12, "numberOfEntries": 12, "totalSize": 2048,
        "currentLedgerEntries": 2, "currentLedgerSize": 200, "lastConfirmedEntry": "8:1",
        "state": "LedgerOpened",
        "ledgers": [{"ledgerId": 3, "entries": 10, "size": 1848, "timestamp": 1700000000000},
                    {"ledgerId": 8, "entries": 2, "size": 200, "timestamp": 0}],
        "cursors": {"s": {"markDeletePosition": "3:4", "readPosition": "8:2",
                          "individuallyDeletedMessages": "[(3:5..3:7]]",
                          "numberOfEntriesSinceFirstNotAckedMessage": 6,
                          "properties": {"k": 1}}},
        "compactedLedger": {"ledgerId": 11, "entries": 4, "size": 400, "offloaded": False,
                            "underReplicated": False},
    })


def test_a_terminated_ledger_without_compacted_ledger() -> None:
    rendered = stats_json.internal(dataclasses.replace(
        INTERNAL, terminated=True, compacted_ledger=None))
    assert rendered["state"] == "Terminated"
    assert "compactedLedger" not in rendered


def test_a_non_persistent_topic_renders_as_apaches_non_persistent_topic_stats() -> None:
    consumer = SUBSCRIPTION.consumers[0]
    shared = NonPersistentSubscriptionStats(
        sub_type=SubType.SHARED, msg_out=6, bytes_out=600, msg_drop_rate=0.5,
        consumers=(consumer,))
    exclusive = NonPersistentSubscriptionStats(
        sub_type=SubType.EXCLUSIVE, msg_out=4, bytes_out=400, msg_drop_rate=0.25, consumers=())
    value = NonPersistentTopicStats(msg_in=10, bytes_in=1000, publishers=TOPIC.publishers,
                                    subscriptions={"a": shared, "b": exclusive})
    assert json.dumps(stats_json.topic(value)) == json.dumps({
        "msgRateIn": 0.0, "msgThroughputIn": 0.0, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
        "msgInCounter": 10, "bytesInCounter": 1000, "msgOutCounter": 10,
        "bytesOutCounter": 1000, "averageMsgSize": 100.0, "storageSize": 0, "backlogSize": 0,
        "msgDropRate": 0.75,
        "publishers": [{"producerId": 4, "producerName": "p", "msgInCounter": 10,
                        "bytesInCounter": 1000, "address": "127.0.0.1:5001",
                        "msgDropRate": 0.0}],
        "subscriptions": {
            "a": {"msgRateOut": 0.0, "msgThroughputOut": 0.0, "msgOutCounter": 6,
                  "bytesOutCounter": 600, "msgBacklog": 0, "msgDropRate": 0.5,
                  "type": "Shared", "isDurable": False, "isReplicated": False,
                  "consumers": [{"consumerName": "c1", "availablePermits": 997,
                                 "msgOutCounter": 40, "bytesOutCounter": 4000,
                                 "address": "127.0.0.1:5000", "priorityLevel": 0}]},
            "b": {"msgRateOut": 0.0, "msgThroughputOut": 0.0, "msgOutCounter": 4,
                  "bytesOutCounter": 400, "msgBacklog": 0, "msgDropRate": 0.25,
                  "type": "Exclusive", "isDurable": False, "isReplicated": False,
                  "consumers": []}},
        "replication": {}, "deduplicationStatus": "Disabled",
    })
