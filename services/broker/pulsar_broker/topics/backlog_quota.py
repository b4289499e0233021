"""Backlog quotas: how big (or old) a topic's backlog is, and what is done past the limit.

The backlog is what the slowest durable subscription has not acknowledged
(the deduplication cursor does not count). Its size is estimated as Apache's
getEstimatedBacklogSize does: the bytes of every ledger after the slowest
mark-delete position, the ledger holding that position counted in proportion
to its unacknowledged entries. A message_age quota looks at the publish time
of the oldest unacknowledged message.

Past a quota, producer_request_hold and producer_exception disconnect the
topic's producers; they are refused when they try again
(ProducerBlockedQuotaExceededError / ...Exception), while the backlog stays
over the limit. consumer_backlog_eviction moves the slowest subscriptions
forward until the backlog is back under 90% of the limit, as Apache does.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.topics import deduplication, message_expiry, policies

if TYPE_CHECKING:
    # Only for annotations: the topic calls into this module (backlog_size), never back.
    from pulsar_broker.topics.persistent_topic import PersistentTopic

log = logging.getLogger(__name__)

#: Eviction brings the backlog down to this share of the limit (Apache's reduction factor).
EVICTION_TARGET = 0.9
#: Eviction rounds per check; a cursor that does not move ends it early.
EVICTION_ROUNDS_MAX = 100


def subscription_cursors(topic: PersistentTopic) -> list[ml.ManagedCursor]:
    return [c for c in topic.ledger.cursors
            if c.durable and c.name != deduplication.CURSOR_NAME]


def slowest_cursor(topic: PersistentTopic) -> ml.ManagedCursor | None:
    cursors = subscription_cursors(topic)
    return min(cursors, key=lambda c: c.mark_delete_position) if cursors else None


def estimated_backlog_size(ledgers: Sequence[ml.LedgerInfo], mark_delete: ml.Position) -> int:
    """Bytes after mark_delete; the ledger holding it counts its unacknowledged share."""
    size = 0
    for info in ledgers:
        if info.ledger_id > mark_delete.ledger_id:
            size += info.size
        elif info.ledger_id == mark_delete.ledger_id and info.entries > 0:
            consumed = min(max(mark_delete.entry_id + 1, 0), info.entries)
            size += info.size * (info.entries - consumed) // info.entries
    return size


def backlog_size(topic: PersistentTopic) -> int:
    """The estimated backlog of the slowest subscription (0 when there is none)."""
    slowest = slowest_cursor(topic)
    if slowest is None:
        return 0
    return estimated_backlog_size(topic.ledger.ledgers, slowest.mark_delete_position)


async def oldest_backlog_older_than(topic: PersistentTopic, cutoff_ms: int) -> bool:
    """True when some subscription still has a message published at or before cutoff_ms."""
    for cursor in subscription_cursors(topic):
        if await message_expiry.newest_expired(cursor, cutoff_ms) is not None:
            return True
    return False


async def exceeded_quotas(topic: PersistentTopic,
                          now_ms: int) -> list[tuple[str, policies.BacklogQuota]]:
    """The topic's quotas its backlog is over now, by type (size first, then age)."""
    exceeded = []
    size_quota = topic.policies.storage_quota
    if size_quota.size_limited and backlog_size(topic) > size_quota.limit_size:
        exceeded.append((policies.DESTINATION_STORAGE, size_quota))
    age_quota = topic.policies.age_quota
    if age_quota.time_limited and await oldest_backlog_older_than(
            topic, now_ms - age_quota.limit_time_s * 1000):
        exceeded.append((policies.MESSAGE_AGE, age_quota))
    return exceeded


async def producer_refusal(topic: PersistentTopic, now_ms: int) -> policies.BacklogQuota | None:
    """The quota that blocks a new producer (hold or exception policy), if any."""
    for _, quota in await exceeded_quotas(topic, now_ms):
        if quota.policy in (policies.HOLD, policies.EXCEPTION):
            return quota
    return None


async def enforce(topic: PersistentTopic, now_ms: int) -> None:
    """One check of the topic's quotas, acting on each one exceeded."""
    for quota_type, quota in await exceeded_quotas(topic, now_ms):
        log.info("backlog quota %s exceeded on %s: applying %s", quota_type, topic.name,
                 quota.policy)
        if quota.policy != policies.EVICTION:
            disconnect_producers(topic)
        elif quota_type == policies.DESTINATION_STORAGE:
            await evict_for_size(topic, quota.limit_size)
        else:
            await evict_for_age(topic, now_ms - int(quota.limit_time_s * 1000 * EVICTION_TARGET))


def disconnect_producers(topic: PersistentTopic) -> None:
    """Tell every producer to reconnect; while the quota is exceeded it is then refused."""
    for producer in list(topic.producers.values()):
        topic.remove_producer(producer)
        if producer.disconnect is not None:
            producer.disconnect()


async def evict_for_size(topic: PersistentTopic, limit_size: int) -> None:
    """Skip messages on the slowest subscriptions until the backlog fits 90% of the limit."""
    target = limit_size * EVICTION_TARGET
    previous: ml.ManagedCursor | None = None
    for _ in range(EVICTION_ROUNDS_MAX):
        backlog = backlog_size(topic)
        slowest = slowest_cursor(topic)
        if backlog <= target or slowest is None or slowest is previous:
            return
        # Rounded up (Apache rounds down and may stop just above the target).
        to_skip = math.ceil((backlog - target) / backlog * slowest.number_of_entries_in_backlog)
        if to_skip <= 0:
            return
        log.info("%s: backlog %d > %d bytes, skipping %d entries of %s", topic.name, backlog,
                 int(target), to_skip, slowest.name)
        await slowest.skip_entries(to_skip)
        _wake(topic, slowest)
        previous = slowest


async def evict_for_age(topic: PersistentTopic, cutoff_ms: int) -> None:
    """Acknowledge, on every subscription, what was published at or before cutoff_ms."""
    for cursor in subscription_cursors(topic):
        if await message_expiry.expire_before(cursor, cutoff_ms):
            _wake(topic, cursor)


def _wake(topic: PersistentTopic, cursor: ml.ManagedCursor) -> None:
    subscription = topic.subscriptions.get(cursor.name)
    if subscription is not None:
        subscription.new_entries()
