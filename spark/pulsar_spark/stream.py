"""Streaming reads: micro-batches between per-partition entry positions, replayable from a checkpoint.

An offset maps each topic partition to "ledgerId:entryId", the next entry to
read ("-1:-1" before the first one). A micro-batch reads from its start offset
(inclusive) to its end offset (exclusive); the end is taken from the broker's
last confirmed entry when Spark asks for the latest offset. The source
reads storage by position, so Spark can replay any checkpointed range: with
a checkpointed query and an idempotent or transactional sink (the file sink)
each message is processed once. Without the `subscription` option nothing is
held on the broker and a query that falls behind retention sees
DataLossError (or skips ahead with failOnDataLoss=false); with it, a durable
subscription created at the initial offset is moved to each committed offset
(admin resetcursor), so retention keeps everything not yet committed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as ds
from pyspark.sql import types as T
from pyspark.sql.streaming.datasource import ReadLimit, SupportsTriggerAvailableNow

from pulsar_spark import admin, catalog, options, planning, segment_reads

#: Offset of a partition before its first entry.
BEFORE_FIRST = "-1:-1"


def _position_text(position: options.Position) -> str:
    return f"{position.ledger_id}:{position.entry_id}"


def next_position(layout: planning.Layout) -> options.Position:
    """The position after the last confirmed entry (exclusive end of what is readable)."""
    lac = layout.last_confirmed
    if lac.ledger_id < 0:
        return options.Position(-1, -1)
    return options.Position(lac.ledger_id, lac.entry_id + 1)


class PulsarStreamReader(ds.DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, opts: options.ReadOptions, spark_schema: T.StructType) -> None:
        self.opts = opts
        self.spark_schema = spark_schema
        self._available_now: dict[str, str] | None = None

    def _latest(self) -> dict[str, str]:
        client = admin.AdminClient(self.opts.admin_url)
        latest = {}
        for partition in catalog.resolve_partitions(client, self.opts):
            layout = planning.layout_from_stats(partition,
                                                catalog.partition_stats(client, partition))
            latest[partition.name] = _position_text(next_position(layout))
        return latest

    def initialOffset(self) -> dict[str, str]:
        if self.opts.starting == "latest":
            offset = self._latest()
        else:
            given = self.opts.starting if isinstance(self.opts.starting, dict) else {}
            offset = {name: _position_text(given[name]) if name in given else BEFORE_FIRST
                      for name in self._latest()}
        self._pin(offset, create=True)
        return offset

    def _pin(self, offset: dict[str, str], *, create: bool) -> None:
        """With option subscription: hold retention at offset through a durable subscription."""
        if not self.opts.subscription:
            return
        client = admin.AdminClient(self.opts.admin_url)
        for name, text in offset.items():
            position = planning.parse_position(text)
            where = (position.ledger_id, position.entry_id)
            if create:
                client.create_subscription(name, self.opts.subscription, where)
            else:
                client.reset_cursor(name, self.opts.subscription, where)

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:
        # Only ReadAllAvailable is offered (getDefaultReadLimit is not overridden).
        latest = dict(self._available_now or self._latest())
        for name, position in start.items():
            latest.setdefault(name, position)
        return latest

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._latest()

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[ds.InputPartition]:
        bounded = dataclasses.replace(
            self.opts,
            starting={n: planning.parse_position(p) for n, p in start.items()},
            ending={n: planning.parse_position(p) for n, p in end.items()})
        planner = catalog.Planner(bounded)
        try:
            planned = planner.plan([], only=frozenset(end))
        finally:
            planner.close()
        return ([segment_reads.SegmentPartition(p) for p in planned]
                or [segment_reads.SegmentPartition(None)])

    def read(self, partition: ds.InputPartition) -> Iterator[pa.RecordBatch]:
        planned = getattr(partition, "planned", None)
        if planned is None:
            return iter(())
        return segment_reads.read_segment(self.opts, self.spark_schema, planned)

    def commit(self, end: dict[str, Any]) -> None:
        """Release what is processed: the subscription (if any) moves to the committed offset."""
        if self.opts.subscription:
            self._pin({str(k): str(v) for k, v in end.items()}, create=False)
