"""The `pulsar` data source for Spark 4's Python Data Source API: batch reads and the writer.

Thin adapter: options are parsed by `options`, planning is `catalog`, each
planned segment is read by `segment_reads` (as the streaming reader's are).
Filters on __publish_time and __partition are used for pruning and handed
back to Spark, which still applies them exactly. Filter pushdown needs
`spark.sql.python.filterPushdown.enabled=true` (set by `register`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as ds
from pyspark.sql import types as T

from pulsar_spark import (
    admin,
    catalog,
    counters,
    options,
    pushdown,
    schema,
    segment_reads,
    stream,
    topic_schema,
)

#: Named apart: `options` is also the parameter name Spark gives the data source.
_ReadOptions = options.ReadOptions

_OPERATORS: dict[type, str] = {
    ds.EqualTo: "=", ds.GreaterThan: ">", ds.GreaterThanOrEqual: ">=",
    ds.LessThan: "<", ds.LessThanOrEqual: "<=", ds.In: "in",
}


class PulsarDataSource(ds.DataSource):
    """spark.read.format("pulsar").option("admin.url", ...).option("topic", ...).load()"""

    @classmethod
    def name(cls) -> str:
        return "pulsar"

    def __init__(self, options: dict[str, str]) -> None:  # Spark passes it by this name
        super().__init__(options)
        self._raw = dict(options)
        self._resolved: _ReadOptions | None = None

    def read_options(self) -> options.ReadOptions:
        """The parsed options; without a schema option, with the topic's registry schema
        (looked up once per data source)."""
        if self._resolved is None:
            self._resolved = with_topic_schema(options.parse_read_options(self._raw))
        return self._resolved

    def schema(self) -> T.StructType:
        opts = self.read_options()
        return schema.dataframe_schema(opts.schema_type, opts.schema_definition)

    def reader(self, schema: T.StructType) -> ds.DataSourceReader:  # names fixed by Spark
        return PulsarBatchReader(self.read_options(), self._selected(schema))

    def streamReader(self, schema: T.StructType) -> ds.DataSourceStreamReader:
        return stream.PulsarStreamReader(self.read_options(), self._selected(schema))

    def _selected(self, given: T.StructType) -> T.StructType:
        """Spark's schema: ours, or the subset of our columns a `.schema(...)` named."""
        return schema.check_selection(given, self.schema())

    def writer(self, schema: T.StructType, overwrite: bool) -> ds.DataSourceWriter:
        from pulsar_spark import writer

        return writer.PulsarWriter(self._raw, schema)


def with_topic_schema(opts: options.ReadOptions) -> options.ReadOptions:
    """Options whose schema.type is auto, resolved from the schema registry of the topics."""
    if opts.schema_type != options.AUTO:
        return opts
    client = admin.AdminClient(opts.admin_url)
    topics = list(opts.topics) if opts.topics_pattern is None else \
        catalog.topics_matching(client, opts.topics_pattern)
    found = [topic_schema.of_topic(client, t) for t in topics]
    chosen = topic_schema.common(topics, found)
    return dataclasses.replace(
        opts, schema_type=chosen.kind, schema_definition=chosen.definition,
        writer_definitions=topic_schema.writers_by_topic(topics, found)
        if chosen.kind == "avro" else {})


def _conditions(filters: Sequence[ds.Filter]) -> list[pushdown.Condition]:
    found = []
    for f in filters:
        op = _OPERATORS.get(type(f))
        attribute: tuple[Any, ...] = tuple(getattr(f, "attribute", ()))
        if op is None or len(attribute) != 1:
            continue
        value: Any = getattr(f, "value", None)
        found.append((str(attribute[0]), op, tuple(value) if op == "in" else value))
    return found


class PulsarBatchReader(ds.DataSourceReader):
    def __init__(self, opts: options.ReadOptions, spark_schema: T.StructType) -> None:
        self.opts = opts
        self.spark_schema = spark_schema
        self.conditions: list[pushdown.Condition] = []

    def pushFilters(self, filters: list[ds.Filter]) -> Any:
        # Pruning only narrows what is read; every filter is still Spark's to apply.
        self.conditions = _conditions(filters)
        return filters

    def partitions(self) -> Sequence[ds.InputPartition]:
        planner = catalog.Planner(self.opts)
        try:
            planned = planner.plan(self.conditions)
        finally:
            planner.close()
        counters.record(self.opts.metrics_dir, counters.ReadCounters(
            entries_probed=planner.entries_probed, partitions_planned=len(planned)))
        if not planned:
            return [segment_reads.SegmentPartition(None)]  # Spark wants at least one partition
        return [segment_reads.SegmentPartition(p) for p in planned]

    def read(self, partition: ds.InputPartition) -> Iterator[pa.RecordBatch]:
        planned = getattr(partition, "planned", None)
        if planned is None:
            return iter(())
        return segment_reads.read_segment(self.opts, self.spark_schema, planned)
