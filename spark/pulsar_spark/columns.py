"""The metadata columns of a record batch, built from per-entry values with numpy and Arrow.

Most metadata is shared by all messages of an entry (topic, partition,
publish time, producer, the message-id prefix) or is a small integer per
message (batch index, sequence id, event time): those columns come from
per-entry values repeated by numpy and Arrow compute, not from a Python
value per row. Keys and properties are per-message Python values only for
the entries that carry them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pulsar_spark import unpack

METADATA_COLUMNS = ("__key", "__topic", "__partition", "__message_id", "__publish_time",
                    "__event_time", "__sequence_id", "__producer_name", "__properties")


@dataclasses.dataclass(frozen=True)
class Chunk:
    """The messages of one entry that go into a record batch."""

    ledger_id: int
    entry_id: int
    publish_time: int
    producer_name: str
    batched: bool
    #: Its messages; their byte ranges point into the record batch's joined payloads.
    layout: unpack.Layout
    #: The schema version the producer wrote the entry with (None: none announced).
    schema_version: int | None = None

    def __len__(self) -> int:
        return len(self.layout)


def message_ids(chunks: list[Chunk], partition: int) -> pa.Array:
    """"ledger:entry:partition:batchIndex" (batch index -1 for a non-batched entry)."""
    prefixes = pa.array([f"{c.ledger_id}:{c.entry_id}:{partition}:" for c in chunks], pa.string())
    counts = np.array([len(c) for c in chunks], np.int64)
    owner = np.repeat(np.arange(len(chunks)), counts)
    index = np.concatenate([np.arange(len(c), dtype=np.int64) if c.batched
                            else np.full(len(c), -1, np.int64) for c in chunks])
    return pc.binary_join_element_wise(prefixes.take(owner), pa.array(index).cast(pa.string()), "")


def metadata_columns(chunks: list[Chunk], topic: str, partition: int,
                     fields: list[pa.Field]) -> list[pa.Array]:
    """The metadata columns `fields` names (any of METADATA_COLUMNS), in that order and type."""
    rows = sum(len(c) for c in chunks)
    counts = np.array([len(c) for c in chunks], np.int64)
    layouts = [c.layout for c in chunks]
    owner = np.repeat(np.arange(len(chunks)), counts)

    def event_times(kind: pa.DataType) -> pa.Array:
        values = np.concatenate([lay.event_times for lay in layouts]) * 1000
        return pa.array(values, kind, mask=values == 0)

    builders: dict[str, Callable[[pa.DataType], pa.Array]] = {
        "__key": lambda kind: _keys(layouts, rows, kind),
        "__topic": lambda kind: _repeated_string(topic, rows),
        "__partition": lambda kind: pa.array(np.full(rows, partition, np.int32)),
        "__message_id": lambda kind: message_ids(chunks, partition),
        "__publish_time": lambda kind: pa.array(
            np.repeat(np.array([c.publish_time for c in chunks], np.int64) * 1000, counts), kind),
        "__event_time": event_times,
        "__sequence_id": lambda kind: pa.array(np.concatenate([lay.sequence_ids
                                                               for lay in layouts])),
        "__producer_name": lambda kind: pa.array(
            [c.producer_name for c in chunks], pa.string()).take(owner),
        "__properties": lambda kind: _properties(layouts, rows, kind),
    }
    arrays = [builders[f.name](f.type) for f in fields]
    return [a if a.type == f.type else a.cast(f.type) for a, f in zip(arrays, fields, strict=True)]


def _repeated_string(value: str, rows: int) -> pa.Array:
    raw = value.encode()
    offsets = np.arange(rows + 1, dtype=np.int32) * len(raw)
    return pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(raw * rows))


def _keys(layouts: list[unpack.Layout], rows: int, key_type: pa.DataType) -> pa.Array:
    if all(lay.keys is None for lay in layouts):
        return pa.nulls(rows, key_type)
    values: list[str | None] = []
    for lay in layouts:
        values.extend(lay.keys if lay.keys is not None else [None] * len(lay))
    return pa.array(values, key_type)


def _properties(layouts: list[unpack.Layout], rows: int, map_type: pa.DataType) -> pa.Array:
    if all(lay.properties is None for lay in layouts):
        empty = pa.array([], pa.string())
        return pa.MapArray.from_arrays(pa.array(np.zeros(rows + 1, np.int32)), empty, empty,
                                       type=map_type)
    values: list[list[tuple[str, str]]] = []
    for lay in layouts:
        values.extend(lay.properties if lay.properties is not None else [[]] * len(lay))
    return pa.array(values, map_type)
