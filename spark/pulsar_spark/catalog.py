"""The planner's view of the cluster: topics to partitions, partitions to readable ledger segments.

This is the driver-side part of a scan. It asks the admin API for partitions
and managed-ledger layouts, finds each ledger's bookies, narrows segments by
publish time (reading single entries' metadata from the bookies for the
binary search), and cuts segments into input partitions.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from typing import Any

from pulsar_common.wire import entry as wire_entry

from pulsar_spark import admin, entries, errors, locate, options, planning, pushdown

_PARTITION_SUFFIX = re.compile(r"^(.*)-partition-(\d+)$")


@dataclasses.dataclass(frozen=True)
class PlannedRead:
    """One input partition: a ledger segment and where to read it."""

    segment: planning.Segment
    ledger: entries.LedgerLocation


def resolve_partitions(client: admin.AdminClient, opts: options.ReadOptions) \
        -> list[planning.TopicPartition]:
    topics = list(opts.topics) if opts.topics_pattern is None else \
        topics_matching(client, opts.topics_pattern)
    result: list[planning.TopicPartition] = []
    for topic in topics:
        count = client.partitions(topic)
        if count > 0:
            result.extend(planning.TopicPartition(topic, i) for i in range(count))
        else:
            client.internal_stats(topic)  # 404 here is the clear "topic does not exist"
            result.append(planning.TopicPartition(topic, -1))
    return result


def partition_stats(client: admin.AdminClient, partition: planning.TopicPartition) \
        -> dict[str, Any]:
    """internalStats of a topic partition; a partition never written to has no ledgers yet."""
    try:
        return client.internal_stats(partition.name)
    except errors.TopicNotFoundError:
        if partition.partition < 0:
            raise
        return {"ledgers": [], "lastConfirmedEntry": "-1:-1"}


def topics_matching(client: admin.AdminClient, pattern: str) -> list[str]:
    """Topics (partitioned ones once, by base name) of the pattern's namespace that match it."""
    full = options.full_topic_name(pattern) if "://" not in pattern else pattern
    namespace = "/".join(full.partition("://")[2].split("/")[:2])
    regex = re.compile(full)
    names = set(client.partitioned_topics(namespace))
    for name in client.namespace_topics(namespace):
        match = _PARTITION_SUFFIX.match(name)
        names.add(match.group(1) if match else name)
    return sorted(n for n in names if regex.fullmatch(n))


def namespace_tables(client: admin.AdminClient, namespace: str) -> list[str]:
    """Every persistent topic of a namespace (partitioned topics by base name)."""
    return topics_matching(client, f"persistent://{namespace}/.*")


class Planner:
    def __init__(self, opts: options.ReadOptions, source: entries.EntrySource | None = None) -> None:
        self.opts = opts
        self.client = admin.AdminClient(opts.admin_url)
        self._source = source
        self.entries_probed = 0

    def plan(self, conditions: Sequence[pushdown.Condition],
             only: frozenset[str] | None = None) -> list[PlannedRead]:
        """Input partitions of the scan; `only` limits it to the named topic partitions."""
        partitions = resolve_partitions(self.client, self.opts)
        if only is not None:
            partitions = [p for p in partitions if p.name in only]
        allowed = pushdown.allowed_partitions(conditions, [p.partition for p in partitions])
        partitions = planning.prune_partitions(partitions, allowed)
        layouts, stats = [], []
        for partition in partitions:
            stat = partition_stats(self.client, partition)
            stats.append(stat)
            layouts.append(planning.layout_from_stats(partition, stat))
        segments = [s for layout in layouts for s in planning.bounded(
            layout, self.opts.starting, self.opts.ending, self.opts.fail_on_data_loss)]
        locations = self._locations(segments, stats)
        segments = self._narrow_by_time(segments, locations, conditions)
        pieces = planning.split(segments, self.opts.entries_per_partition,
                                self.opts.min_partitions)
        return [PlannedRead(s, locations[(s.partition, s.ledger_id)]) for s in pieces]

    def _locations(self, segments: Sequence[planning.Segment], stats: list[dict[str, Any]]) \
            -> dict[tuple[planning.TopicPartition, int], entries.LedgerLocation]:
        # Sources the options name come first; then what the broker reported.
        needed = {s.ledger_id for s in segments}
        records: dict[int, bytes] = {}
        if needed and self.opts.metadata_url:
            records.update(locate.from_store(self.opts.metadata_url, needed))
        elif needed and self.opts.standalone_bookie:
            records.update(locate.on_standalone_bookie(self.opts.standalone_bookie, needed))
        for stat in stats:
            for ledger_id, record in locate.from_stats(stat).items():
                records.setdefault(ledger_id, record)
        missing = needed - set(records)
        if missing:
            raise locate.missing_metadata_error(missing)
        ends: dict[tuple[planning.TopicPartition, int], int] = {}
        for s in segments:
            key = (s.partition, s.ledger_id)
            ends[key] = max(ends.get(key, -1), s.last_entry_id)
        return {key: entries.LedgerLocation(key[1], records[key[1]], last)
                for key, last in ends.items()}

    def _narrow_by_time(self, segments: list[planning.Segment],
                        locations: dict[tuple[planning.TopicPartition, int], entries.LedgerLocation],
                        conditions: Sequence[pushdown.Condition]) -> list[planning.Segment]:
        bounds = pushdown.publish_time_range(conditions).intersect(pushdown.TimeRange(
            self.opts.starting_time_ms,
            None if self.opts.ending_time_ms is None else self.opts.ending_time_ms - 1))
        if not bounds.bounded:
            return segments
        padded = bounds.padded(self.opts.publish_time_tolerance_ms)
        narrowed = []
        for segment in segments:
            location = locations[(segment.partition, segment.ledger_id)]
            cache: dict[int, int] = {}

            def probe(entry_id: int, location: entries.LedgerLocation = location,
                      cache: dict[int, int] = cache) -> int:
                if entry_id not in cache:
                    data = self.source().read(location, entry_id, entry_id)[0]
                    cache[entry_id] = wire_entry.parse_entry_metadata(data).publish_time
                    self.entries_probed += 1
                return cache[entry_id]

            found = pushdown.narrow(probe, segment.first_entry_id, segment.last_entry_id, padded)
            if found is not None:
                narrowed.append(dataclasses.replace(
                    segment, first_entry_id=found[0], last_entry_id=found[1]))
        return narrowed

    def source(self) -> entries.EntrySource:
        if self._source is None:
            self._source = entries.BookieEntrySource()
        return self._source

    def close(self) -> None:
        if self._source is not None:
            self._source.close()
