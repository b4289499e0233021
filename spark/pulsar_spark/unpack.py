"""Entries split into their messages: where each payload lies and the per-message metadata.

A batch entry's (decompressed) payload is a run of records
``u32 size | SingleMessageMetadata | payload``. Walking them one at a time in
Python, with a protobuf parse per message, costs ~2 us a message, which was
most of the data source's time. `scan` does the common case with numpy
instead: it finds every place where a record header could start (three zero
bytes, a small metadata size, then the tag of payload_size), decodes the
varints there for all candidates at once, and accepts the result only if the
records chain exactly: the first starts at 0, each one's payload ends where
the next candidate starts, the last ends at the end of the batch, and there
are as many as the entry says. A false candidate inside a payload breaks the
chain, so an accepted scan is the true layout, never a guess. The scan knows
payload_size, event_time and sequence_id only; anything else (properties,
keys, null values, compaction marks, negative varints) makes it decline, and
`walk`, the general per-message path, does the entry.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

import numpy as np
import numpy.typing as npt
from pulsar_common.wire import errors as wire_errors
from pulsar_common.wire import pulsar_api_pb2 as pb

Int64s = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]

_U32 = struct.Struct(">I")
_parse_single = pb.SingleMessageMetadata.FromString
#: Tags (field number << 3 | wire type 0) of the SingleMessageMetadata varints `scan` reads.
_TAG_PAYLOAD_SIZE = 3 << 3
_TAG_EVENT_TIME = 5 << 3
_TAG_SEQUENCE_ID = 8 << 3
#: Longest varint `scan` decodes: 9 bytes hold 63 bits, so values stay non-negative int64.
_VARINT_BYTES_MAX = 9


@dataclasses.dataclass(frozen=True)
class Layout:
    """The messages of one entry: payload byte ranges in the entry's payload, and metadata.

    Sparse columns are None when no message of the entry has a value, so the
    common entry costs nothing for them.
    """

    starts: Int64s
    ends: Int64s
    sequence_ids: Int64s
    #: Event time in ms; 0 when unset (Pulsar's own "no event time").
    event_times: Int64s
    keys: list[str | None] | None = None
    properties: list[list[tuple[str, str]]] | None = None
    nulls: Bools | None = None

    def __len__(self) -> int:
        return len(self.starts)


def single(metadata: pb.MessageMetadata, payload_size: int) -> Layout:
    """The layout of a non-batched entry: one message, its metadata in MessageMetadata."""
    key = metadata.partition_key if metadata.HasField("partition_key") else None
    props = [(p.key, p.value) for p in metadata.properties]
    return Layout(
        starts=np.zeros(1, np.int64), ends=np.full(1, payload_size, np.int64),
        sequence_ids=np.full(1, _signed(metadata.sequence_id), np.int64),
        event_times=np.full(1, _signed(metadata.event_time), np.int64),
        keys=None if key is None else [key], properties=[props] if props else None,
        nulls=np.ones(1, np.bool_) if metadata.null_value else None)


def _signed(value: int) -> int:
    """A uint64 field as the int64 the Java clients see (sequence ids are Java longs)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def unpack(body: bytes, count: int, base_sequence_id: int) -> Layout:
    """The layout of a batch of `count` messages: `scan` when it applies, else `walk`."""
    base = _signed(base_sequence_id)
    found = scan(body, count, base)
    return found if found is not None else walk(body, count, base)


def walk(body: bytes, count: int, base_sequence_id: int) -> Layout:
    """Message by message, with the protobuf parser: handles every field."""
    view = memoryview(body)
    starts, ends, sequence_ids, event_times = [], [], [], []
    keys: list[str | None] = []
    properties: list[list[tuple[str, str]]] = []
    nulls: list[bool] = []
    pos = 0
    for index in range(count):
        size = _U32.unpack_from(view, pos)[0]
        start = pos + 4 + size
        metadata: Any = _parse_single(view[pos + 4 : start])
        end = start + metadata.payload_size
        if end > len(view):
            raise wire_errors.BatchFormatError("a message runs past the batch")
        starts.append(start)
        ends.append(end)
        sequence_ids.append(_signed(metadata.sequence_id) if metadata.HasField("sequence_id")
                            else base_sequence_id + index)
        event_times.append(_signed(metadata.event_time))
        keys.append(metadata.partition_key if metadata.HasField("partition_key") else None)
        properties.append([(p.key, p.value) for p in metadata.properties])
        nulls.append(metadata.null_value)
        pos = end
    return Layout(
        starts=np.array(starts, np.int64), ends=np.array(ends, np.int64),
        sequence_ids=np.array(sequence_ids, np.int64),
        event_times=np.array(event_times, np.int64),
        keys=keys if any(k is not None for k in keys) else None,
        properties=properties if any(properties) else None,
        nulls=np.array(nulls, np.bool_) if any(nulls) else None)


def scan(body: bytes, count: int, base_sequence_id: int) -> Layout | None:
    """The layout found with numpy, or None when the entry needs `walk` (see the module doc)."""
    data = np.frombuffer(body, np.uint8)
    size = len(data)
    if count <= 0 or size < 5:
        return None
    zeros = np.flatnonzero(data[: size - 4] == 0)
    heads = zeros[(data[zeros + 1] == 0) & (data[zeros + 2] == 0)
                  & (data[zeros + 3] != 0) & (data[zeros + 4] == _TAG_PAYLOAD_SIZE)]
    if len(heads) != count or heads[0] != 0:
        return None
    heads = heads.astype(np.int64)
    metadata_end = heads + 4 + data[heads + 3].astype(np.int64)
    if metadata_end[-1] > size:
        return None
    decoded = _varints(data, heads + 5)
    if decoded is None:
        return None
    payload_size, pos = decoded
    fields = []
    for tag in (_TAG_EVENT_TIME, _TAG_SEQUENCE_ID):
        found = _optional_varint(data, pos, metadata_end, tag)
        if found is None:
            return None
        value, pos = found
        fields.append(value)
    if not np.array_equal(pos, metadata_end):
        return None  # fields the scan does not know: properties, keys, null values, ...
    ends = metadata_end + payload_size
    if ends[-1] != size or not np.array_equal(ends[:-1], heads[1:]):
        return None
    event_times, sequence_ids = fields
    defaults = base_sequence_id + np.arange(count, dtype=np.int64)
    return Layout(starts=metadata_end, ends=ends,
                  sequence_ids=np.where(sequence_ids < 0, defaults, sequence_ids),
                  event_times=np.maximum(event_times, 0))


def _optional_varint(data: npt.NDArray[np.uint8], pos: Int64s, limit: Int64s,
                     tag: int) -> tuple[Int64s, Int64s] | None:
    """The field `tag` where it comes next: (value, -1 where absent), new positions."""
    inside = pos < limit
    present = inside & (data[np.minimum(pos, len(data) - 1)] == tag)
    if not present.any():
        return np.full(len(pos), -1, np.int64), pos
    decoded = _varints(data, np.where(present, pos + 1, 0))  # 0: any readable position
    if decoded is None:
        return None
    value, after = decoded
    return np.where(present, value, -1), np.where(present, after, pos)


def _varints(data: npt.NDArray[np.uint8], pos: Int64s) -> tuple[Int64s, Int64s] | None:
    """Unsigned varints starting at each position: (values, positions after them)."""
    last = len(data) - 1
    if len(pos) and pos.max() > last:
        return None
    byte = data[pos].astype(np.int64)
    value = byte & 0x7F
    more = byte >= 0x80
    length = np.ones(len(pos), np.int64)
    shift = 7
    while more.any():
        if shift >= 7 * _VARINT_BYTES_MAX:
            return None
        at = pos + length
        if at[more].max() > last:
            return None
        byte = data[np.minimum(at, last)].astype(np.int64)
        value = np.where(more, value | ((byte & 0x7F) << shift), value)
        length += more
        more &= byte >= 0x80
        shift += 7
    return value, pos + length
