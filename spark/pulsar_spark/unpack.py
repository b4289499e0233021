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
`walk`, the general per-message path, does the entry. `unpack_entries` scans
all the batch entries of a record batch together (laid out in one buffer), so
numpy's per-call cost is paid per record batch rather than per entry.
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
    """The messages of one entry: payload byte ranges (in the buffer unpacked), and metadata.

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


def single(metadata: pb.MessageMetadata, start: int, end: int) -> Layout:
    """A non-batched entry: one message at [start, end), its metadata in MessageMetadata."""
    key = metadata.partition_key if metadata.HasField("partition_key") else None
    props = [(p.key, p.value) for p in metadata.properties]
    return Layout(
        starts=np.full(1, start, np.int64), ends=np.full(1, end, np.int64),
        sequence_ids=np.full(1, _signed(metadata.sequence_id), np.int64),
        event_times=np.full(1, _signed(metadata.event_time), np.int64),
        keys=None if key is None else [key], properties=[props] if props else None,
        nulls=np.ones(1, np.bool_) if metadata.null_value else None)


def _signed(value: int) -> int:
    """A uint64 field as the int64 the Java clients see (sequence ids are Java longs)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def unpack(body: bytes, count: int, base_sequence_id: int) -> Layout:
    """The layout of one batch of `count` messages: `scan` when it applies, else `walk`."""
    return unpack_entries(body, [Span(0, len(body), count, base_sequence_id)])[0]


@dataclasses.dataclass(frozen=True)
class Span:
    """A batch entry's payload inside a larger buffer: [start, end), messages, base sequence id."""

    start: int
    end: int
    count: int
    base_sequence_id: int


def unpack_entries(body: bytes | bytearray, spans: list[Span]) -> list[Layout]:
    """Layouts of batch entries laid out in `body` (positions are in `body`), scanned together."""
    data = np.frombuffer(body, np.uint8)
    bases = [_signed(s.base_sequence_id) for s in spans]
    layouts = scan_spans(data, np.array([s.start for s in spans], np.int64),
                         np.array([s.end for s in spans], np.int64),
                         np.array([s.count for s in spans], np.int64), np.array(bases, np.int64))
    result = []
    for span, base, layout in zip(spans, bases, layouts, strict=True):
        if layout is None:
            walked = walk(body[span.start : span.end], span.count, base)
            layout = dataclasses.replace(walked, starts=walked.starts + span.start,
                                         ends=walked.ends + span.start)
        result.append(layout)
    return result


def walk(body: bytes | bytearray, count: int, base_sequence_id: int) -> Layout:
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
    """One batch found with numpy, or None when it needs `walk` (see the module doc)."""
    return scan_spans(np.frombuffer(body, np.uint8), np.zeros(1, np.int64),
                      np.full(1, len(body), np.int64), np.full(1, count, np.int64),
                      np.full(1, base_sequence_id, np.int64))[0]


def scan_spans(data: npt.NDArray[np.uint8], starts: Int64s, ends: Int64s, counts: Int64s,
               bases: Int64s) -> list[Layout | None]:
    """Batches [starts[i], ends[i]) of `data` found with numpy; None for those that need `walk`."""
    result: list[Layout | None] = [None] * len(starts)
    size = len(data)
    if size < 5 or not len(starts):
        return result
    heads = _header_candidates(data)
    if not len(heads):
        return result
    low, high = np.searchsorted(heads, starts), np.searchsorted(heads, ends)
    fits = (high - low == counts) & (counts > 0) & \
        (heads[np.minimum(low, len(heads) - 1)] == starts)
    taken = np.flatnonzero(fits)
    if not len(taken):
        return result
    counts = counts[taken]
    heads = heads[ranges(low[taken], counts)]
    owner = np.repeat(np.arange(len(taken)), counts)
    metadata_end = heads + 4 + data[heads + 3].astype(np.int64)
    payload_size, pos, bad = _varints(data, heads + 5)
    event_times, pos, bad_event = _optional_varint(data, pos, metadata_end, _TAG_EVENT_TIME)
    sequence_ids, pos, bad_sequence = _optional_varint(data, pos, metadata_end, _TAG_SEQUENCE_ID)
    # Unknown fields (properties, keys, null values, ...) leave pos short of metadata_end.
    bad |= bad_event | bad_sequence | (pos != metadata_end)
    message_end = metadata_end + payload_size
    following = np.empty_like(heads)
    following[:-1] = heads[1:]
    first = np.cumsum(counts) - counts
    last = first + counts - 1
    following[last] = ends[taken]
    bad |= message_end != following
    failed = np.bincount(owner[bad], minlength=len(taken)) > 0
    index = np.arange(len(heads), dtype=np.int64) - np.repeat(first, counts)
    sequence_ids = np.where(sequence_ids < 0, bases[taken][owner] + index, sequence_ids)
    event_times = np.maximum(event_times, 0)
    for k, entry in enumerate(taken.tolist()):
        if not failed[k]:
            cut = slice(int(first[k]), int(last[k]) + 1)
            result[entry] = Layout(metadata_end[cut], message_end[cut], sequence_ids[cut],
                                   event_times[cut])
    return result


def _header_candidates(data: npt.NDArray[np.uint8]) -> Int64s:
    """Positions p with data[p:p+3] zero, data[p+3] not, data[p+4] the payload_size tag.

    Three zeros in a row hold an aligned pair of zeros (at p if p is even,
    else at p+1), so the search runs over 16-bit words: half the comparisons,
    and about one hit per record instead of one per zero byte.
    """
    size = len(data)
    pairs = np.flatnonzero(data[: size - size % 2].view(np.uint16) == 0) * 2
    pairs = pairs[pairs <= size - 4]  # a header at pair (or pair - 1) has its 5 bytes in data
    # At pair when data[pair + 2] is zero too, else at pair - 1 if that is zero.
    third = data[pairs + 2] == 0
    before = (pairs >= 1) & (data[np.maximum(pairs - 1, 0)] == 0)
    starts = np.where(third, pairs, pairs - 1)[third | before]
    starts = starts[starts <= size - 5]
    heads: Int64s = starts[(data[starts + 3] != 0) & (data[starts + 4] == _TAG_PAYLOAD_SIZE)]
    return heads


def ranges(starts: Int64s, lengths: Int64s) -> Int64s:
    """Indices of the ranges [starts[i], starts[i] + lengths[i]), concatenated.

    One array and one cumulative sum: ones, with each range's first slot
    holding the jump from the previous range's last index (np.repeat slows
    down several times when the lengths vary, as payload lengths do).
    """
    if not (lengths > 0).all():
        starts, lengths = starts[lengths > 0], lengths[lengths > 0]
    if not len(lengths):
        return np.zeros(0, np.int64)
    ends = np.cumsum(lengths)
    steps = np.ones(int(ends[-1]), np.int64)
    steps[0] = starts[0]
    steps[ends[:-1]] = starts[1:] - (starts[:-1] + lengths[:-1] - 1)
    return np.cumsum(steps, out=steps)


def _optional_varint(data: npt.NDArray[np.uint8], pos: Int64s, limit: Int64s,
                     tag: int) -> tuple[Int64s, Int64s, Bools]:
    """The field `tag` where it comes next: (value or -1 where absent, new positions, bad)."""
    present = (pos < limit) & (data.take(pos, mode="clip") == tag)
    if not present.any():
        return np.full(len(pos), -1, np.int64), pos, np.zeros(len(pos), np.bool_)
    value, after, bad = _varints(data, np.where(present, pos + 1, 0))  # 0: any readable byte
    return np.where(present, value, -1), np.where(present, after, pos), bad & present


def _varints(data: npt.NDArray[np.uint8], pos: Int64s) -> tuple[Int64s, Int64s, Bools]:
    """Unsigned varints at each position: (values, positions after them, bad).

    Bad: the varint runs past the data or is longer than _VARINT_BYTES_MAX.
    """
    last = len(data) - 1
    bad = pos > last
    byte = data.take(pos, mode="clip")  # clipped positions are marked bad
    value = (byte & 0x7F).astype(np.int64)
    more = byte >= 0x80
    length = np.ones(len(pos), np.int64)
    for shift in range(7, 7 * _VARINT_BYTES_MAX, 7):
        if not more.any():
            break
        at = pos + length
        bad |= more & (at > last)
        byte = data.take(at, mode="clip")
        value |= ((byte & 0x7F) * more).astype(np.int64) << shift
        length += more
        more &= byte >= 0x80
    return value, pos + length, bad | more
