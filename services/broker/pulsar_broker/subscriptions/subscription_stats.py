"""What a subscription reports about itself: counts and consumers, as plain values.

`Subscription.stats()` returns these; the REST layer renders them as Apache's
SubscriptionStats JSON (pulsar_broker.web.stats_json) and fills in the rates.
"""

from __future__ import annotations

import dataclasses

from pulsar_broker.subscriptions.consumer import SubType


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerStats:
    consumer_name: str
    available_permits: int
    unacked_messages: int
    msg_out: int
    bytes_out: int
    address: str
    priority_level: int


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SubscriptionStats:
    sub_type: SubType
    durable: bool
    #: Entries not yet acknowledged, and of those the ones waiting for their delivery time.
    backlog: int
    delayed: int
    unacked_messages: int
    msg_out: int
    bytes_out: int
    #: Entries acknowledged without delivery because no client could read them.
    unreadable_entries_skipped: int
    #: In the subscription's order of consumers.
    consumers: tuple[ConsumerStats, ...]
