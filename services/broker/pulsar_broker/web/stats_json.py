"""Apache's JSON for the stats values topics and subscriptions return.

Topics and subscriptions report plain values (topics/topic_stats.py,
subscriptions/subscription_stats.py); this module renders them with
Apache's camelCase field names, in Apache's order, with zero rates that
web/stats.py then fills in from the rate tracker.
"""

from __future__ import annotations

from typing import Any

from pulsar_broker.subscriptions.consumer import SUBSCRIPTION_TYPE_NAMES
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


def topic(stats: TopicStats | NonPersistentTopicStats) -> dict[str, Any]:
    """Apache's TopicStats: PersistentTopicStats or NonPersistentTopicStats."""
    if isinstance(stats, NonPersistentTopicStats):
        return _non_persistent_topic(stats)
    return {
        "msgRateIn": 0.0,
        "msgThroughputIn": 0.0,
        "msgRateOut": 0.0,
        "msgThroughputOut": 0.0,
        "msgInCounter": stats.msg_in,
        "bytesInCounter": stats.bytes_in,
        "averageMsgSize": (stats.bytes_in / stats.msg_in) if stats.msg_in else 0.0,
        "storageSize": stats.storage_size,
        "backlogSize": stats.backlog_size,
        "publishers": [_publisher(p) for p in stats.publishers],
        "subscriptions": {name: subscription(s) for name, s in stats.subscriptions.items()},
        "replication": {},
        "deduplicationStatus": "Enabled" if stats.deduplication else "Disabled",
        **({} if stats.compaction is None else {"compaction": _compaction(stats.compaction)}),
    }


def _publisher(stats: PublisherStats) -> dict[str, Any]:
    return {"producerId": stats.producer_id, "producerName": stats.producer_name,
            "msgInCounter": stats.msg_in, "bytesInCounter": stats.bytes_in,
            "address": stats.address}


def _compaction(stats: CompactionStats) -> dict[str, Any]:
    return {
        "lastCompactionRemovedEventCount": stats.removed_event_count,
        "lastCompactionSucceedTimestamp": stats.succeed_timestamp_ms,
        "lastCompactionFailedTimestamp": stats.failed_timestamp_ms,
        "lastCompactionDurationTimeInMills": stats.duration_ms,
    }


def subscription(stats: SubscriptionStats) -> dict[str, Any]:
    """Apache's SubscriptionStats, with pulsar-py's unreadableEntriesSkipped."""
    return {
        "msgRateOut": 0.0,
        "msgThroughputOut": 0.0,
        "msgBacklog": stats.backlog,
        "backlogSize": 0,
        "msgBacklogNoDelayed": max(0, stats.backlog - stats.delayed),
        "msgDelayed": stats.delayed,
        "unackedMessages": stats.unacked_messages,
        "type": SUBSCRIPTION_TYPE_NAMES[stats.sub_type],
        "msgOutCounter": stats.msg_out,
        "bytesOutCounter": stats.bytes_out,
        "isDurable": stats.durable,
        # pulsar-py only: entries acknowledged without delivery because no client
        # could read them (stored before SENDs were checked).
        "unreadableEntriesSkipped": stats.unreadable_entries_skipped,
        "isReplicated": False,
        "consumers": [_consumer(c) for c in stats.consumers],
    }


def _consumer(stats: ConsumerStats) -> dict[str, Any]:
    return {
        "consumerName": stats.consumer_name,
        "availablePermits": stats.available_permits,
        "unackedMessages": stats.unacked_messages,
        "msgOutCounter": stats.msg_out,
        "bytesOutCounter": stats.bytes_out,
        "address": stats.address,
        "priorityLevel": stats.priority_level,
    }


def internal(stats: InternalStats) -> dict[str, Any]:
    """Apache's PersistentTopicInternalStats, without the fields of absent features
    (web/stats.py adds those)."""
    return {
        "entriesAddedCounter": stats.number_of_entries,
        "numberOfEntries": stats.number_of_entries,
        "totalSize": stats.total_size,
        "currentLedgerEntries": stats.current_ledger_entries,
        "currentLedgerSize": stats.current_ledger_size,
        "lastConfirmedEntry": str(stats.last_confirmed_entry),
        "state": "Terminated" if stats.terminated else "LedgerOpened",
        "ledgers": [
            {"ledgerId": info.ledger_id, "entries": info.entries, "size": info.size,
             "timestamp": info.timestamp_ms}
            for info in stats.ledgers
        ],
        "cursors": {name: _cursor(c) for name, c in stats.cursors.items()},
        **({} if stats.compacted_ledger is None
           else {"compactedLedger": _compacted_ledger(stats.compacted_ledger)}),
    }


def _cursor(stats: CursorStats) -> dict[str, Any]:
    return {
        "markDeletePosition": str(stats.mark_delete_position),
        "readPosition": str(stats.read_position),
        "individuallyDeletedMessages": "["
        + ", ".join(f"({lo}..{hi}]" for lo, hi in stats.individually_deleted_ranges)
        + "]",
        "numberOfEntriesSinceFirstNotAckedMessage": stats.entries_since_first_not_acked,
        "properties": dict(stats.properties),
    }


def _compacted_ledger(stats: CompactedLedgerStats) -> dict[str, Any]:
    return {"ledgerId": stats.ledger_id, "entries": stats.entries, "size": stats.size,
            "offloaded": False, "underReplicated": False}


def _non_persistent_topic(stats: NonPersistentTopicStats) -> dict[str, Any]:
    """Apache's NonPersistentTopicStats; the rates other than msgDropRate are filled in by
    the rate tracker, as for persistent topics."""
    subscriptions = {name: _non_persistent_subscription(s)
                     for name, s in stats.subscriptions.items()}
    return {
        "msgRateIn": 0.0,
        "msgThroughputIn": 0.0,
        "msgRateOut": 0.0,
        "msgThroughputOut": 0.0,
        "msgInCounter": stats.msg_in,
        "bytesInCounter": stats.bytes_in,
        "msgOutCounter": sum(s["msgOutCounter"] for s in subscriptions.values()),
        "bytesOutCounter": sum(s["bytesOutCounter"] for s in subscriptions.values()),
        "averageMsgSize": (stats.bytes_in / stats.msg_in) if stats.msg_in else 0.0,
        "storageSize": 0,
        "backlogSize": 0,
        "msgDropRate": sum(s["msgDropRate"] for s in subscriptions.values()),
        "publishers": [{**_publisher(p), "msgDropRate": 0.0} for p in stats.publishers],
        "subscriptions": subscriptions,
        "replication": {},
        "deduplicationStatus": "Disabled",
    }


def _non_persistent_subscription(stats: NonPersistentSubscriptionStats) -> dict[str, Any]:
    """Apache's NonPersistentSubscriptionStats."""
    return {
        "msgRateOut": 0.0,
        "msgThroughputOut": 0.0,
        "msgOutCounter": stats.msg_out,
        "bytesOutCounter": stats.bytes_out,
        "msgBacklog": 0,
        "msgDropRate": stats.msg_drop_rate,
        "type": SUBSCRIPTION_TYPE_NAMES[stats.sub_type],
        "isDurable": False,
        "isReplicated": False,
        "consumers": [
            {"consumerName": c.consumer_name, "availablePermits": c.available_permits,
             "msgOutCounter": c.msg_out, "bytesOutCounter": c.bytes_out,
             "address": c.address, "priorityLevel": c.priority_level}
            for c in stats.consumers
        ],
    }
