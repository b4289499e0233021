"""What a topic reports about itself, as plain values.

`PersistentTopic.stats()` and `internal_stats()`, `NonPersistentTopic.stats()`
and `NonPersistentSubscription.stats()` return these; the REST layer renders
them as Apache's TopicStats, PersistentTopicInternalStats and
NonPersistentTopicStats JSON (pulsar_broker.web.stats_json) and fills in the
rates and the fields of features this broker does not have.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import SubType
from pulsar_broker.subscriptions.subscription_stats import ConsumerStats, SubscriptionStats


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PublisherStats:
    producer_id: int
    producer_name: str
    msg_in: int
    bytes_in: int
    address: str


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CompactionStats:
    """The last compaction: events it removed, when it last succeeded and failed, how long."""

    removed_event_count: int
    succeed_timestamp_ms: int
    failed_timestamp_ms: int
    duration_ms: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class TopicStats:
    msg_in: int
    bytes_in: int
    storage_size: int
    backlog_size: int
    publishers: tuple[PublisherStats, ...]
    subscriptions: Mapping[str, SubscriptionStats]
    deduplication: bool
    #: None: the topic has no compaction.
    compaction: CompactionStats | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CursorStats:
    mark_delete_position: ml.Position
    read_position: ml.Position
    individually_deleted_ranges: Sequence[tuple[ml.Position, ml.Position]]
    entries_since_first_not_acked: int
    properties: Mapping[str, int]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CompactedLedgerStats:
    ledger_id: int
    entries: int
    size: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class InternalStats:
    """The managed ledger under a topic: its counters, ledgers and cursors."""

    #: Entries added and not trimmed (Apache's entriesAddedCounter and numberOfEntries).
    number_of_entries: int
    total_size: int
    current_ledger_entries: int
    current_ledger_size: int
    last_confirmed_entry: ml.Position
    terminated: bool
    ledgers: tuple[ml.LedgerInfo, ...]
    cursors: Mapping[str, CursorStats]
    #: None: no compacted ledger is loaded.
    compacted_ledger: CompactedLedgerStats | None


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NonPersistentSubscriptionStats:
    sub_type: SubType
    msg_out: int
    bytes_out: int
    #: Messages dropped per second (no permits when they came).
    msg_drop_rate: float
    consumers: tuple[ConsumerStats, ...]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class NonPersistentTopicStats:
    msg_in: int
    bytes_in: int
    publishers: tuple[PublisherStats, ...]
    subscriptions: Mapping[str, NonPersistentSubscriptionStats]
