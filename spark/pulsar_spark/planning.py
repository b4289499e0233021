"""Pure planning of a batch read: which entries of which ledgers each input partition reads.

Input is each topic partition's managed-ledger layout as the broker reports
it (ledgers in order, their entry counts, the last confirmed entry); output
is a list of ledger segments, each at most `entries_per_partition` long.
Offsets are entry positions: starting is inclusive, ending exclusive. The
open ledger is readable up to the broker's last confirmed entry, which is
exactly what producers have been acknowledged for.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pulsar_spark import errors, options


@dataclasses.dataclass(frozen=True)
class TopicPartition:
    """One readable managed ledger: a non-partitioned topic (partition -1) or one partition."""

    topic: str
    partition: int

    @property
    def name(self) -> str:
        return self.topic if self.partition < 0 else f"{self.topic}-partition-{self.partition}"


@dataclasses.dataclass(frozen=True)
class LedgerInfo:
    ledger_id: int
    entries: int


@dataclasses.dataclass(frozen=True)
class Layout:
    """A managed ledger as internalStats reports it."""

    partition: TopicPartition
    ledgers: tuple[LedgerInfo, ...]
    last_confirmed: options.Position

    def readable_last_entry(self, ledger: LedgerInfo) -> int:
        """Last readable entry id of a ledger (-1 when none): its LAC if it is the open one."""
        if ledger.ledger_id == self.last_confirmed.ledger_id:
            return self.last_confirmed.entry_id
        if ledger.ledger_id > self.last_confirmed.ledger_id:
            return -1  # created after the last confirmed entry: nothing acknowledged yet
        return ledger.entries - 1


@dataclasses.dataclass(frozen=True)
class Segment:
    """Entries first..last (inclusive) of one ledger of one topic partition."""

    partition: TopicPartition
    ledger_id: int
    first_entry_id: int
    last_entry_id: int

    @property
    def entries(self) -> int:
        return self.last_entry_id - self.first_entry_id + 1


def parse_position(text: str) -> options.Position:
    ledger, _, entry = text.partition(":")
    return options.Position(int(ledger), int(entry))


def layout_from_stats(partition: TopicPartition, stats: dict[str, Any]) -> Layout:
    ledgers = tuple(LedgerInfo(int(item["ledgerId"]), int(item.get("entries", 0)))
                    for item in stats.get("ledgers", []))
    return Layout(partition, ledgers, parse_position(str(stats.get("lastConfirmedEntry", "-1:-1"))))


def readable_ranges(layout: Layout) -> list[Segment]:
    """Every readable entry of the managed ledger, one segment per ledger."""
    segments = []
    for ledger in layout.ledgers:
        last = layout.readable_last_entry(ledger)
        if last >= 0:
            segments.append(Segment(layout.partition, ledger.ledger_id, 0, last))
    return segments


def _start_of(offsets: options.Offsets, partition: TopicPartition) -> options.Position | str:
    if isinstance(offsets, str):
        return offsets
    return offsets.get(partition.name, offsets.get(partition.topic, "earliest")) \
        if partition.partition < 0 else offsets.get(partition.name, "earliest")


def _end_of(offsets: options.Offsets, partition: TopicPartition) -> options.Position | str:
    if isinstance(offsets, str):
        return offsets
    return offsets.get(partition.name, "latest")


def bounded(layout: Layout, starting: options.Offsets, ending: options.Offsets,
            fail_on_data_loss: bool) -> list[Segment]:
    """The readable segments between the starting (inclusive) and ending (exclusive) offsets."""
    segments = readable_ranges(layout)
    start = _start_of(starting, layout.partition)
    end = _end_of(ending, layout.partition)
    if start == "latest":
        return []
    if isinstance(start, options.Position):
        check_not_deleted(layout, start, fail_on_data_loss)
        segments = [s for s in (_clip_from(s, start) for s in segments) if s is not None]
    if isinstance(end, options.Position):
        segments = [s for s in (_clip_before(s, end) for s in segments) if s is not None]
    return segments


def check_not_deleted(layout: Layout, start: options.Position, fail_on_data_loss: bool) -> None:
    """A start before the first remaining ledger names messages retention has deleted."""
    if not layout.ledgers or start.ledger_id < 0:
        return
    first = layout.ledgers[0].ledger_id
    if start.ledger_id < first and fail_on_data_loss:
        raise errors.DataLossError(
            f"{layout.partition.name}: offset {start.ledger_id}:{start.entry_id} was deleted by "
            f"retention (the oldest remaining ledger is {first}); set failOnDataLoss=false to "
            "read from the oldest remaining message instead")


def _clip_from(segment: Segment, start: options.Position) -> Segment | None:
    if segment.ledger_id < start.ledger_id:
        return None
    if segment.ledger_id > start.ledger_id or start.entry_id <= segment.first_entry_id:
        return segment
    if start.entry_id > segment.last_entry_id:
        return None
    return dataclasses.replace(segment, first_entry_id=start.entry_id)


def _clip_before(segment: Segment, end: options.Position) -> Segment | None:
    if segment.ledger_id > end.ledger_id:
        return None
    if segment.ledger_id < end.ledger_id or end.entry_id > segment.last_entry_id:
        return segment
    if end.entry_id <= segment.first_entry_id:
        return None
    return dataclasses.replace(segment, last_entry_id=end.entry_id - 1)


def split(segments: Sequence[Segment], entries_per_partition: int,
          min_partitions: int = 1) -> list[Segment]:
    """Long segments cut into pieces of at most entries_per_partition entries, and smaller
    ones when that makes fewer than min_partitions pieces (never below one entry)."""
    total = sum(s.last_entry_id - s.first_entry_id + 1 for s in segments)
    if min_partitions > 1:
        entries_per_partition = min(entries_per_partition, max(1, total // min_partitions))
    pieces = []
    for segment in segments:
        first = segment.first_entry_id
        while first <= segment.last_entry_id:
            last = min(first + entries_per_partition - 1, segment.last_entry_id)
            pieces.append(dataclasses.replace(segment, first_entry_id=first, last_entry_id=last))
            first = last + 1
    return pieces


def prune_partitions(partitions: Sequence[TopicPartition],
                     allowed: frozenset[int] | None) -> list[TopicPartition]:
    """Partitions whose index passes the pushed-down __partition filters."""
    if allowed is None:
        return list(partitions)
    return [p for p in partitions if p.partition in allowed]
