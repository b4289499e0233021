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
import functools
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from pulsar_spark import unpack

METADATA_COLUMNS = ("__key", "__topic", "__partition", "__message_id", "__publish_time",
                    "__event_time", "__sequence_id", "__producer_name", "__properties")


@dataclasses.dataclass(frozen=True, kw_only=True)
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


#: Batch indices whose decimal strings `message_ids` keeps ready; larger batches take the slow path.
BATCH_INDEX_STRINGS_MAX = 1 << 16


def message_ids(chunks: list[Chunk], partition: int) -> pa.Array:
    """"ledger:entry:partition:batchIndex" (batch index -1 for a non-batched entry).

    Each id is its entry's prefix followed by its batch index's digits, both
    cut by one gather from one buffer (the digits of -1, 0, 1, ... then the
    prefixes), with no Python value per row.
    """
    counts = np.array([len(c) for c in chunks], np.int64)
    owner = np.repeat(np.arange(len(chunks)), counts)
    index = np.concatenate([np.arange(len(c), dtype=np.int64) if c.batched
                            else np.full(len(c), -1, np.int64) for c in chunks])
    prefixes = [f"{c.ledger_id}:{c.entry_id}:{partition}:".encode() for c in chunks]
    highest = int(counts.max()) - 1
    if highest >= BATCH_INDEX_STRINGS_MAX:
        return pc.binary_join_element_wise(pa.array(prefixes, pa.string()).take(owner),
                                           pa.array(index).cast(pa.string()), "")
    digits, digit_offsets = _index_strings(BATCH_INDEX_STRINGS_MAX)
    digits_used = int(digit_offsets[highest + 2])  # those of -1 .. highest
    source = np.frombuffer(digits[:digits_used] + b"".join(prefixes), np.uint8)
    prefix_lengths = np.array([len(p) for p in prefixes], np.int64)
    prefix_starts = digits_used + np.cumsum(prefix_lengths) - prefix_lengths
    slot = index + 1  # -1 is the table's first string
    starts = np.empty(2 * len(index), np.int64)
    lengths = np.empty(2 * len(index), np.int64)
    starts[0::2], lengths[0::2] = prefix_starts[owner], prefix_lengths[owner]
    starts[1::2], lengths[1::2] = digit_offsets[slot], digit_offsets[slot + 1] - digit_offsets[slot]
    offsets = np.zeros(len(index) + 1, np.int32)
    np.cumsum(lengths[0::2] + lengths[1::2], out=offsets[1:])
    return pa.StringArray.from_buffers(len(index), pa.py_buffer(offsets),
                                       pa.py_buffer(source[unpack.ranges(starts, lengths)]))


@functools.lru_cache(maxsize=1)
def _index_strings(count: int) -> tuple[bytes, npt.NDArray[np.int64]]:
    """The decimal strings of -1, 0, 1, ... count - 1 back to back, and their offsets."""
    texts = [b"-1"] + [str(i).encode() for i in range(count)]
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return b"".join(texts), offsets


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
