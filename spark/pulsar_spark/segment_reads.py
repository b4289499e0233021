"""Reading one planned segment of a topic partition into Arrow record batches.

Both the batch reader (`source`) and the streaming reader (`stream`) plan
their input partitions with `catalog` and hand each one here: entries come
from the bookies in chunks sized by the entries seen so far, one read in
flight while the previous chunk is decoded by `decode`.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql import datasource as ds
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from pulsar_spark import catalog, counters, decode, entries, errors, options

#: Bytes of entries one read call of an input partition asks for. A bookie reading an entry
#: from its entry log reads ahead and caches the entries stored after it, so a few sequential
#: reads in flight are mostly served from that cache; a hundred concurrent reads of large
#: entries (batches of ~100 KB) each redo the read-ahead: measured on a standalone, 5-10x
#: the bookie's CPU for the same entries. Tiny entries still go 128 a call.
READ_BYTES_TARGET = 256 * 1024
#: Entries per read call: the first call (before entry sizes are known), and the bounds.
ENTRIES_PER_READ_FIRST = 4
ENTRIES_PER_READ_MIN = 2
ENTRIES_PER_READ_MAX = 128


class SegmentPartition(ds.InputPartition):
    """An input partition: one planned segment, or none (Spark wants at least one)."""

    def __init__(self, planned: catalog.PlannedRead | None) -> None:
        super().__init__(None)
        self.planned = planned


def read_segment(opts: options.ReadOptions, spark_schema: T.StructType,
                 planned: catalog.PlannedRead) -> Iterator[pa.RecordBatch]:
    """Record batches of one planned segment, read in chunks from the bookies."""
    segment = planned.segment
    decoder = decode.EntryDecoder(
        to_arrow_schema(spark_schema, timezone="UTC"), opts.schema_type, opts.schema_definition,
        topic=segment.partition.topic, partition=segment.partition.partition,
        batch_rows=opts.arrow_batch_rows,
        writer_definitions=opts.writer_definitions.get(segment.partition.topic))
    decoder.time_range = (opts.starting_time_ms, opts.ending_time_ms)
    source = entries.BookieEntrySource()
    try:
        yield from decoder.batches(_chunks(source, planned))
    finally:
        source.close()
        counters.record(opts.metrics_dir, counters.ReadCounters(
            entries_read=source.entries_read, bytes_read=source.bytes_read,
            messages_decoded=decoder.messages_decoded))


def _chunks(source: entries.EntrySource, planned: catalog.PlannedRead) \
        -> Iterator[decode.StoredEntry]:
    """The segment's entries in order; the next read is in flight while these are decoded."""
    segment = planned.segment

    def submit(first: int, count: int) -> tuple[int, concurrent.futures.Future[list[bytes]]]:
        last = min(first + count - 1, segment.last_entry_id)
        return first, source.submit(planned.ledger, first, last)

    pending: tuple[int, concurrent.futures.Future[list[bytes]]] | None = None
    if segment.first_entry_id <= segment.last_entry_id:
        pending = submit(segment.first_entry_id, ENTRIES_PER_READ_FIRST)
    try:
        while pending is not None:
            first, future = pending
            stored = future.result()
            if not stored:
                raise errors.EntryReadError(
                    f"ledger {segment.ledger_id}: no entries from {first} on were returned")
            following = first + len(stored)
            pending = None
            if following <= segment.last_entry_id:
                pending = submit(following, _entries_per_read(stored))
            for offset, data in enumerate(stored):
                yield segment.ledger_id, first + offset, data
    finally:
        if pending is not None:
            pending[1].cancel()


def _entries_per_read(stored: list[bytes]) -> int:
    average = max(1, sum(len(d) for d in stored) // max(1, len(stored)))
    return max(ENTRIES_PER_READ_MIN, min(ENTRIES_PER_READ_MAX, READ_BYTES_TARGET // average))
