"""Topic stats as Apache renders them, and their sum over the partitions of a topic.

The topic's own `stats()` gives the per-topic view (a value that stats_json
renders as Apache's JSON); this module adds the topic-level out
counters Apache reports (the sum over subscriptions) and builds
PartitionedTopicStats: the partitions' numbers added up, publishers listed
together, subscriptions merged by name, plus `metadata.partitions`.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Iterable
from typing import Any

from aiohttp import web
from pulsar_bookie.client import ledger_metadata
from pulsar_common.wire import entry as wire_entry

from pulsar_broker import errors
from pulsar_broker.topics import backlog_quota
from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_broker.web import peek, rates, rest, stats_json

#: Fields of a subscription that are not numbers to add up.
_SUBSCRIPTION_KEEP_FIRST = ("type", "isDurable", "isReplicated")


#: TopicStats fields Apache always renders, for features this broker does not have.
_TOPIC_STATS_DEFAULTS: dict[str, Any] = {
    "msgChunkPublished": False,
    "offloadedStorageSize": 0,
    "waitingPublishers": 0,
    "compaction": {"lastCompactionRemovedEventCount": 0, "lastCompactionSucceedTimestamp": 0,
                   "lastCompactionFailedTimestamp": 0, "lastCompactionDurationTimeInMills": 0},
}
_COMPACTED_LEDGER_NONE = {"ledgerId": -1, "entries": -1, "size": -1, "offloaded": False,
                          "underReplicated": False}


def topic_stats(topic: PersistentTopic | NonPersistentTopic, tracker: rates.RateTracker,
                owner_broker: str = "") -> dict[str, Any]:
    """The topic's stats with the tracker's rates filled in, as Apache reports them."""
    result = {**_TOPIC_STATS_DEFAULTS, **stats_json.topic(topic.stats())}
    if owner_broker:
        result.setdefault("ownerBroker", owner_broker)
    name = str(topic.name)
    topic_rates = tracker.topic_rates(name)
    result["msgRateIn"] = topic_rates.msg_rate_in
    result["msgThroughputIn"] = topic_rates.msg_throughput_in
    result["msgRateOut"] = topic_rates.msg_rate_out
    result["msgThroughputOut"] = topic_rates.msg_throughput_out
    for sub_name, sub in result.get("subscriptions", {}).items():
        sub_rates = tracker.subscription_rates(name, sub_name)
        sub["msgRateOut"] = sub_rates.msg_rate_out
        sub["msgThroughputOut"] = sub_rates.msg_throughput_out
        subscription = topic.subscriptions.get(sub_name)
        if subscription is not None:
            # topic.stats() lists consumers in the subscription's order.
            for consumer, entry in zip(subscription.consumers, sub.get("consumers", []), strict=False):
                consumer_rates = tracker.consumer_rates(name, sub_name, consumer)
                entry["msgRateOut"] = consumer_rates.msg_rate_out
                entry["msgThroughputOut"] = consumer_rates.msg_throughput_out
    for entry in result.get("publishers", []):
        producer = topic.producers.get(entry.get("producerId", -1))
        if producer is not None:
            producer_rates = tracker.producer_rates(name, producer)
            entry["msgRateIn"] = producer_rates.msg_rate_in
            entry["msgThroughputIn"] = producer_rates.msg_throughput_in
    subscriptions = result.get("subscriptions", {}).values()
    result.setdefault("msgOutCounter", sum(s.get("msgOutCounter", 0) for s in subscriptions))
    result.setdefault("bytesOutCounter", sum(s.get("bytesOutCounter", 0) for s in subscriptions))
    return result


@dataclasses.dataclass(frozen=True)
class StatsOptions:
    """The query parameters of Apache's stats (GetStatsOptions)."""

    #: getPreciseBacklog: msgBacklog counted entry by entry. Ours always is (the cursor
    #: knows its acknowledged ranges), so the flag changes nothing.
    precise_backlog: bool = False
    #: subscriptionBacklogSize: each subscription's backlogSize in bytes (else -1).
    subscription_backlog_size: bool = True
    #: getEarliestTimeInBacklog: publish time of each subscription's oldest unacknowledged
    #: message (earliestMsgPublishTimeInBacklog) and the topic's oldest of those.
    earliest_time_in_backlog: bool = False
    #: excludePublishers / excludeConsumers: leave those lists empty.
    exclude_publishers: bool = False
    exclude_consumers: bool = False

    @classmethod
    def of(cls, request: web.Request) -> StatsOptions:
        return cls(
            precise_backlog=rest.query_flag(request, "getPreciseBacklog"),
            subscription_backlog_size=rest.query_flag(request, "subscriptionBacklogSize",
                                                      default=True),
            earliest_time_in_backlog=rest.query_flag(request, "getEarliestTimeInBacklog"),
            exclude_publishers=rest.query_flag(request, "excludePublishers"),
            exclude_consumers=rest.query_flag(request, "excludeConsumers"))

    def query(self) -> str:
        """These options as the query string of a partition's /stats on its broker."""
        return "?" + urllib.parse.urlencode({
            "getPreciseBacklog": str(self.precise_backlog).lower(),
            "subscriptionBacklogSize": str(self.subscription_backlog_size).lower(),
            "getEarliestTimeInBacklog": str(self.earliest_time_in_backlog).lower(),
            "excludePublishers": str(self.exclude_publishers).lower(),
            "excludeConsumers": str(self.exclude_consumers).lower()})


def apply_exclusions(result: dict[str, Any], options: StatsOptions) -> None:
    """excludePublishers / excludeConsumers: empty lists where Apache leaves them empty."""
    if options.exclude_publishers:
        result["publishers"] = []
    if options.exclude_consumers:
        for sub in result.get("subscriptions", {}).values():
            sub["consumers"] = []


async def add_backlog_details(topic: PersistentTopic, result: dict[str, Any],
                              options: StatsOptions) -> None:
    """Each subscription's backlogSize and, when asked, the publish time of its oldest
    unacknowledged message, as Apache computes them."""
    earliest: list[int] = []
    for name, sub in result.get("subscriptions", {}).items():
        subscription = topic.subscriptions.get(name)
        if subscription is None:
            continue
        cursor = subscription.cursor
        sub["backlogSize"] = (backlog_quota.estimated_backlog_size(
            topic.ledger.ledgers, cursor.mark_delete_position)
            if options.subscription_backlog_size else -1)
        if options.earliest_time_in_backlog:
            sub["earliestMsgPublishTimeInBacklog"] = await _oldest_publish_time(topic, cursor)
            if sub["earliestMsgPublishTimeInBacklog"] > 0:
                earliest.append(sub["earliestMsgPublishTimeInBacklog"])
    if options.earliest_time_in_backlog:
        result["earliestMsgPublishTimeInBacklogs"] = min(earliest, default=0)
    apply_exclusions(result, options)


async def _oldest_publish_time(topic: PersistentTopic, cursor: Any) -> int:
    """Publish time (ms) of the cursor's first unacknowledged entry; 0 without backlog."""
    if cursor.number_of_entries_in_backlog == 0:
        return 0
    try:
        entry = await peek.nth_unacknowledged(topic.ledger, cursor, 1)
    except errors.NotFoundError:
        return 0
    return int(wire_entry.parse_entry_metadata(entry.data).publish_time)


#: Publish times that a sum over partitions keeps the oldest (positive) of, not the total.
_OLDEST_TIME = ("earliestMsgPublishTimeInBacklog", "earliestMsgPublishTimeInBacklogs")


def _add_numbers(total: dict[str, Any], part: dict[str, Any]) -> None:
    for key, value in part.items():
        if key in _OLDEST_TIME:
            known = [t for t in (total.get(key, 0), value) if t > 0]
            total[key] = min(known, default=0)
        elif key == "backlogSize" and -1 in (value, total.get(key)):
            total[key] = -1  # not computed for some partition: not known for the whole
        elif isinstance(value, bool):
            total.setdefault(key, value)
        elif isinstance(value, (int, float)):
            total[key] = total.get(key, 0) + value
        elif isinstance(value, list):
            total[key] = total.get(key, []) + value
        elif key not in total:
            total[key] = value


def _merge_subscriptions(all_subscriptions: Iterable[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    merged: dict[str, dict[str, Any]] = {}
    for subscriptions in all_subscriptions:
        for name, sub in subscriptions.items():
            target = merged.setdefault(name, {k: sub[k] for k in _SUBSCRIPTION_KEEP_FIRST if k in sub})
            _add_numbers(target, {k: v for k, v in sub.items() if k not in _SUBSCRIPTION_KEEP_FIRST})
    return merged


def internal_stats(topic: PersistentTopic) -> dict[str, Any]:
    """The managed ledger's internal stats, with Apache's fields for absent features."""
    result = stats_json.internal(topic.internal_stats())
    result.setdefault("pendingAddEntriesCount", 0)
    result.setdefault("waitingCursorsCount", 0)
    result.setdefault("schemaLedgers", [])
    result.setdefault("compactedLedger", dict(_COMPACTED_LEDGER_NONE))
    for name, cursor in result.get("cursors", {}).items():
        subscription = topic.subscriptions.get(name)
        cursor.setdefault("state", "Open")
        cursor.setdefault("active", bool(subscription and subscription.consumers))
    return result


def partitioned_stats(partitions: int, each: dict[str, dict[str, Any]],
                      per_partition: bool) -> dict[str, Any]:
    """Totals over the partitions' stats (each: partition name -> its stats)."""
    each = dict(sorted(each.items()))
    total: dict[str, Any] = {}
    for part in each.values():
        _add_numbers(total, {k: v for k, v in part.items() if k != "subscriptions"})
    total["averageMsgSize"] = (total["bytesInCounter"] / total["msgInCounter"]
                               if total.get("msgInCounter") else 0.0)
    total["subscriptions"] = _merge_subscriptions(p.get("subscriptions", {}) for p in each.values())
    total.setdefault("publishers", [])
    total["metadata"] = {"partitions": partitions}
    total["partitions"] = each if per_partition else {}
    return total


async def add_ledger_metadata(service: Any, result: dict[str, Any]) -> None:
    """Apache's `internalStats?metadata=true`: each ledger's metadata as a JSON string
    (ensembles, quorums, state), without the ledger password."""
    client = getattr(service, "ledger_client", None)
    if client is None:
        return
    for item in result.get("ledgers", []):
        try:
            metadata = await client.get_ledger_metadata(item["ledgerId"])
        except Exception:  # noqa: BLE001 - a ledger deleted meanwhile simply has none
            continue
        record = json.loads(ledger_metadata.to_json(metadata))
        record.pop("password", None)
        item["metadata"] = json.dumps(record, sort_keys=True)
