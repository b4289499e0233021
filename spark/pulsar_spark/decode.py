"""Entries to Arrow record batches: batches unpacked, payloads decoded by schema, metadata columns.

The decoder keeps, per entry, its decompressed payload and its message
layout (`unpack`), and builds a record batch's columns from those at once,
with no Python value per row on the common path: JSON payloads become one
newline-delimited document (the record headers between payloads are
overwritten with whitespace in place) read by Arrow's JSON reader; raw and
string payloads are gathered into one Arrow buffer (fixed-width primitives
viewed as big-endian numbers); metadata columns come
from per-entry values (`columns`). Avro payloads, JSON with
timestamp-millis fields or null values, and any JSON that Arrow's reader
rejects take the per-message path (fastavro or the json module), which
also names the message that does not match the schema. An Avro message is
read with the schema version it was written with when that version is
known (`writer_definitions`), resolved to the reader's schema.
"""

from __future__ import annotations

import dataclasses
import io
import json
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.json as pa_json
from pulsar_common.wire import compression, entry
from pulsar_common.wire import errors as wire_errors

from pulsar_spark import columns, errors, unpack

#: An entry as read from storage: (ledger id, entry id, stored bytes).
StoredEntry = tuple[int, int, bytes]
#: Payloads laid out back to back (a record batch's own buffer is a bytearray).
Body = bytes | bytearray

METADATA_COLUMNS = columns.METADATA_COLUMNS
#: Fixed-width primitive payloads (Pulsar's encoding: big-endian) -> numpy dtype.
PRIMITIVE_DTYPES = {"int8": ">i1", "int16": ">i2", "int32": ">i4", "int64": ">i8",
                    "float": ">f4", "double": ">f8", "boolean": ">u1"}
_SPACE, _NEWLINE, _RETURN = 0x20, 0x0A, 0x0D
_OPEN, _CLOSE, _WHITESPACE = ord("{"), ord("}"), b" \t\r\n"


def gather(body: Body, chunks: list[columns.Chunk]) \
        -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(payload bytes of all messages back to back, offsets: message i is [o[i], o[i+1]))."""
    starts = np.concatenate([c.layout.starts for c in chunks])
    lengths = np.concatenate([c.layout.ends for c in chunks]) - starts
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.frombuffer(body, np.uint8)[unpack.ranges(starts, lengths)], offsets


def json_document(body: bytearray, chunks: list[columns.Chunk]) -> bytearray:
    """The payloads as one stream of JSON values: `body` itself, the bytes between them blanked.

    The bytes between messages' payloads (record headers, the separators
    between entries) become spaces, in place; the payloads stay as they are.
    Read as one block, Arrow's JSON reader takes any whitespace between and
    inside records, so no line breaks are needed: a raw line break inside a
    payload is whitespace there too, unless it sits inside a string, where
    the reader rejects it (see `json_lines`).
    """
    starts = np.concatenate([c.layout.starts for c in chunks])
    ends = np.concatenate([c.layout.ends for c in chunks])
    gap_starts = np.concatenate([np.zeros(1, np.int64), ends])
    gap_ends = np.concatenate([starts, np.full(1, len(body), np.int64)])
    np.frombuffer(body, np.uint8)[unpack.ranges(gap_starts, gap_ends - gap_starts)] = _SPACE
    return body


def json_lines(body: Body, chunks: list[columns.Chunk]) -> bytearray:
    """The payloads as JSON lines: one line per message, in order.

    `body` is copied once; the bytes between messages' payloads (record
    headers, the separators between entries) become spaces led by a newline.
    A raw newline or carriage return can only be whitespace in valid JSON, so
    those inside payloads become spaces too.
    """
    starts = np.concatenate([c.layout.starts for c in chunks])
    ends = np.concatenate([c.layout.ends for c in chunks])
    gap_starts = np.concatenate([np.zeros(1, np.int64), ends])
    gap_ends = np.concatenate([starts, np.full(1, len(body), np.int64)])
    gaps = unpack.ranges(gap_starts, gap_ends - gap_starts)
    lines = bytearray(body)
    data = np.frombuffer(lines, np.uint8)
    in_gaps = data[gaps]
    breaks_in_gaps = np.count_nonzero(in_gaps == _NEWLINE) + np.count_nonzero(in_gaps == _RETURN)
    if np.count_nonzero(data == _NEWLINE) + np.count_nonzero(data == _RETURN) > breaks_in_gaps:
        data[(data == _NEWLINE) | (data == _RETURN)] = _SPACE  # some are inside payloads
    data[gaps] = _SPACE
    data[ends[:-1]] = _NEWLINE
    return lines


class PayloadDecoder:
    """Turns the payloads of one record batch into the payload columns."""

    def __init__(self, schema_type: str, definition: dict[str, Any] | None,
                 fields: list[pa.Field],
                 writer_definitions: dict[int, dict[str, Any]] | None = None) -> None:
        self.schema_type = schema_type
        self.fields = fields
        self._avro: Any = None
        #: AVRO: the schema of each version messages were written with (resolved to _avro).
        self._writers: dict[int, Any] = {}
        self._millis: set[str] = set()
        if schema_type == "avro":
            import fastavro

            self._avro = fastavro.parse_schema(definition or {})
            for version, written in (writer_definitions or {}).items():
                if written != definition:
                    self._writers[version] = fastavro.parse_schema(written)
        self._json_parse_options = pa_json.ParseOptions(
            explicit_schema=pa.schema(fields), unexpected_field_behavior="ignore")
        if schema_type == "json" and definition is not None:
            self._millis = {f["name"] for f in definition.get("fields", [])
                            if _logical(f.get("type")) == "timestamp-millis"}

    def arrays(self, body: bytearray, chunks: list[columns.Chunk],
               ids: Callable[[], pa.Array]) -> list[pa.Array]:
        """Payload columns of the messages of `chunks` (in `body`); `ids` names them in errors.

        With no payload column asked for, payloads are not decoded at all.
        The bytes of `body` between payloads may be overwritten.
        """
        if not self.fields:
            return []
        nulls = _nulls(chunks)
        if self.schema_type in PRIMITIVE_DTYPES:
            return [self._primitive_column(body, chunks, nulls, ids)]
        if self.schema_type in ("bytes", "string", "auto"):
            return [self._raw_column(body, chunks, nulls)]
        if self.schema_type == "json" and not self._millis and nulls is None \
                and _records_each(body, chunks):
            rows = sum(len(c) for c in chunks)
            document = json_document(body, chunks)
            fast = self._json_columns(document, rows)
            if fast is None and (b"\n" in document or b"\r" in document):
                # Raw line breaks inside strings were always taken as spaces: retry so.
                fast = self._json_columns(json_lines(body, chunks), rows)
            if fast is not None:
                return fast
        view = memoryview(body)
        payloads = [view[s:e] for c in chunks
                    for s, e in zip(c.layout.starts.tolist(), c.layout.ends.tolist(), strict=True)]
        null_list = [False] * len(payloads) if nulls is None else nulls.tolist()
        versions = [c.schema_version for c in chunks for _ in range(len(c))]
        return self._record_columns(payloads, null_list, ids().to_pylist(), versions)

    def _primitive_column(self, body: Body, chunks: list[columns.Chunk],
                          nulls: np.ndarray[Any, Any] | None,
                          ids: Callable[[], pa.Array]) -> pa.Array:
        dtype = np.dtype(PRIMITIVE_DTYPES[self.schema_type])
        payload, offsets = gather(body, chunks)
        lengths = np.diff(offsets)
        present = np.ones(len(lengths), np.bool_) if nulls is None else ~nulls
        wrong = present & (lengths != dtype.itemsize)
        if wrong.any():
            where = ids().to_pylist()[int(np.argmax(wrong))]
            raise errors.SchemaError(
                f"message {where} is {int(lengths[np.argmax(wrong)])} bytes, not a "
                f"{self.schema_type} ({dtype.itemsize} bytes)")
        values = np.zeros(len(lengths), dtype.newbyteorder("="))
        values[present] = np.frombuffer(payload.tobytes(), dtype)
        if self.schema_type == "boolean":
            values = values != 0
        return pa.array(values, mask=None if nulls is None else nulls).cast(self.fields[0].type)

    def _raw_column(self, body: Body, chunks: list[columns.Chunk],
                    nulls: np.ndarray[Any, Any] | None) -> pa.Array:
        payload, offsets = gather(body, chunks)
        validity = None if nulls is None else pa.array(~nulls).buffers()[1]
        binary = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), len(offsets) - 1,
            [validity, pa.py_buffer(offsets), pa.py_buffer(payload)])
        target = self.fields[0].type
        if self.schema_type == "string":
            try:
                return binary.cast(pa.large_string()).cast(target)
            except pa.ArrowInvalid:  # not UTF-8: decode with replacement, as Python does
                return pa.array([None if v is None else v.decode("utf-8", "replace")
                                 for v in binary.to_pylist()], target)
        return binary.cast(target)

    def _json_columns(self, data: bytearray, rows: int) -> list[pa.Array] | None:
        """Arrow's JSON reader over the payloads as JSON lines, or None when that cannot work."""
        # One block, one thread: Spark already runs a task per core, and Arrow's
        # thread pool would only add hand-offs (~15% more CPU per message).
        try:
            table = pa_json.read_json(
                pa.py_buffer(data),
                read_options=pa_json.ReadOptions(use_threads=False,
                                                 block_size=max(1 << 20, len(data) + 1)),
                parse_options=self._json_parse_options)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None  # the per-message path names the offending message
        if table.num_rows != rows:
            return None
        return [_single_array(table.column(f.name), f.type) for f in self.fields]

    def _record_columns(self, payloads: list[Any], nulls: list[bool],
                        where: list[str], versions: list[int | None]) -> list[pa.Array]:
        values: list[list[Any]] = [[] for _ in self.fields]
        names = [f.name for f in self.fields]
        for payload, null, position, version in zip(payloads, nulls, where, versions,
                                                    strict=True):
            try:
                record = None if null else self._record(bytes(payload), version)
            except (ValueError, TypeError, EOFError, IndexError, KeyError) as exc:
                raise errors.SchemaError(
                    f"message {position} does not match the {self.schema_type} schema: {exc}"
                ) from exc
            for index, name in enumerate(names):
                values[index].append(None if record is None else record.get(name))
        return [_array(v, f) for v, f in zip(values, self.fields, strict=True)]

    def _record(self, payload: bytes, version: int | None = None) -> dict[str, Any]:
        if self._avro is not None:
            import fastavro

            writer = self._writers.get(version) if version is not None else None
            if writer is None:
                value = fastavro.schemaless_reader(io.BytesIO(payload), self._avro, None)
            else:
                value = fastavro.schemaless_reader(io.BytesIO(payload), writer, self._avro)
        else:
            value = json.loads(payload)
            if isinstance(value, dict):
                for name in self._millis:
                    if isinstance(value.get(name), int):
                        value[name] = value[name] * 1000  # Arrow columns hold microseconds
        if not isinstance(value, dict):
            raise ValueError(f"payload is a {type(value).__name__}, not a record")  # noqa: TRY004
        return value


def _nulls(chunks: list[columns.Chunk]) -> np.ndarray[Any, Any] | None:
    if all(c.layout.nulls is None for c in chunks):
        return None
    return np.concatenate([c.layout.nulls if c.layout.nulls is not None
                           else np.zeros(len(c), np.bool_) for c in chunks])


def _records_each(body: Body, chunks: list[columns.Chunk]) -> bool:
    """Whether every payload opens with `{` and closes with `}` (whitespace aside).

    Arrow's reader only counts the records of the whole block, so a payload
    of two records beside an empty one (or a record cut over two payloads)
    would shift values onto other messages, and it reads a `null` as a
    record of nulls (crashing on one that leads the block). Such batches take
    the per-message path, which names the message.
    """
    starts = np.concatenate([c.layout.starts for c in chunks])
    ends = np.concatenate([c.layout.ends for c in chunks])
    if not (ends > starts).all():
        return False
    data = np.frombuffer(body, np.uint8)
    odd = np.flatnonzero((data[starts] != _OPEN) | (data[ends - 1] != _CLOSE))
    for i in odd.tolist():  # payloads with whitespace around them (rare)
        text = bytes(body[starts[i]:ends[i]]).strip(_WHITESPACE)
        if not (text.startswith(b"{") and text.endswith(b"}")):
            return False
    return True


def _single_array(column: pa.ChunkedArray, kind: pa.DataType) -> pa.Array:
    """The column as one array of type `kind` (no copy when it already is one)."""
    array = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return array if array.type == kind else array.cast(kind)


def _array(values: list[Any], field: pa.Field) -> pa.Array:
    try:
        return pa.array(values, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise errors.SchemaError(f"column {field.name} cannot hold the decoded values: {exc}") \
            from exc


def _schema_version(metadata: Any) -> int | None:
    """The 8-byte big-endian version a producer stamps on its messages (None: none)."""
    raw = bytes(metadata.schema_version) if metadata.HasField("schema_version") else b""
    if len(raw) != 8:
        return None
    version: int = struct.unpack(">q", raw)[0]
    return version


def _logical(avro: Any) -> str | None:
    if isinstance(avro, list):
        for branch in avro:
            if branch != "null":
                return _logical(branch)
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        return str(logical) if logical else None
    return None


class EntryDecoder:
    """Decodes the entries of one topic partition into record batches of a fixed Arrow schema."""

    def __init__(self, arrow_schema: pa.Schema, schema_type: str,
                 definition: dict[str, Any] | None, *, topic: str, partition: int,
                 batch_rows: int,
                 writer_definitions: dict[int, dict[str, Any]] | None = None) -> None:
        self.arrow_schema = arrow_schema
        # Any subset of the columns, in any order (a schema given to the reader).
        self.payload = PayloadDecoder(schema_type, definition,
                                      [f for f in arrow_schema if f.name not in METADATA_COLUMNS],
                                      writer_definitions)
        self.metadata_fields = [f for f in arrow_schema if f.name in METADATA_COLUMNS]
        self.topic = topic
        self.partition = partition
        self.batch_rows = batch_rows
        self.messages_decoded = 0
        #: startingTime (inclusive) and endingTime (exclusive) options, epoch ms.
        self.time_range: tuple[int | None, int | None] = (None, None)

    def batches(self, entries: Iterable[StoredEntry]) -> Iterator[pa.RecordBatch]:
        pending: list[_Pending] = []
        rows = 0
        for ledger_id, entry_id, data in entries:
            try:
                item = self._pending(ledger_id, entry_id, data)
            except (wire_errors.WireError, struct.error, ValueError) as exc:
                raise errors.SchemaError(
                    f"{self.topic}: entry {ledger_id}:{entry_id} is unreadable: {exc}") from exc
            if item is None:
                continue
            pending.append(item)
            rows += item.count
            if rows >= self.batch_rows:
                yield from self._batch(pending)
                pending, rows = [], 0
        if pending:
            yield from self._batch(pending)

    def _pending(self, ledger_id: int, entry_id: int, data: bytes) -> _Pending | None:
        metadata = entry.parse_entry_metadata(data)
        low, high = self.time_range
        if (low is not None and metadata.publish_time < low) or \
                (high is not None and metadata.publish_time >= high):
            return None
        if len(metadata.encryption_keys) > 0:
            raise wire_errors.EncryptedPayloadError("payload is encrypted for its consumers")
        body = compression.decompress(metadata.compression, entry.entry_payload(data),
                                      metadata.uncompressed_size)
        return _Pending(ledger_id, entry_id, metadata, body)

    def _batch(self, pending: list[_Pending]) -> Iterator[pa.RecordBatch]:
        """The record batch of the pending entries (none if they hold no message)."""
        # A separator byte between entries; a bytearray, so that decoding JSON can
        # blank the record headers in place once the messages are found.
        body = bytearray(b"\n").join(p.body for p in pending)
        starts = np.cumsum([0] + [len(p.body) + 1 for p in pending]).tolist()
        try:
            chunks = self._chunks(body, pending, starts)
        except (wire_errors.WireError, struct.error, ValueError):
            for p in pending:  # name the entry at fault
                try:
                    self._chunks(p.body, [p], [0])
                except (wire_errors.WireError, struct.error, ValueError) as exc:
                    raise errors.SchemaError(f"{self.topic}: entry {p.ledger_id}:{p.entry_id} "
                                             f"is unreadable: {exc}") from exc
            raise
        if not chunks:
            return
        meta = columns.metadata_columns(chunks, self.topic, self.partition, self.metadata_fields)
        try:
            payload = self.payload.arrays(
                body, chunks, lambda: columns.message_ids(chunks, self.partition))
        except errors.SchemaError as exc:
            raise errors.SchemaError(f"{self.topic}: {exc}") from exc
        self.messages_decoded += sum(len(c) for c in chunks)
        by_name = dict(zip([f.name for f in self.payload.fields], payload, strict=True))
        by_name.update(zip([f.name for f in self.metadata_fields], meta, strict=True))
        yield pa.RecordBatch.from_arrays([by_name[name] for name in self.arrow_schema.names],
                                         schema=self.arrow_schema)

    @staticmethod
    def _chunks(body: Body, pending: list[_Pending], starts: list[int]) -> list[columns.Chunk]:
        spans = [unpack.Span(start, start + len(p.body), p.metadata.num_messages_in_batch,
                             p.metadata.sequence_id)
                 for p, start in zip(pending, starts, strict=False) if p.batched]
        batches = iter(unpack.unpack_entries(body, spans))
        chunks = []
        for p, start in zip(pending, starts, strict=False):
            layout = next(batches) if p.batched else unpack.single(p.metadata, start,
                                                                   start + len(p.body))
            if len(layout):
                chunks.append(columns.Chunk(
                    ledger_id=p.ledger_id, entry_id=p.entry_id,
                    publish_time=p.metadata.publish_time,
                    producer_name=p.metadata.producer_name, batched=p.batched, layout=layout,
                    schema_version=_schema_version(p.metadata)))
        return chunks


@dataclasses.dataclass(frozen=True)
class _Pending:
    """An entry waiting for its record batch: its metadata and decompressed payload."""

    ledger_id: int
    entry_id: int
    metadata: Any
    body: bytes

    @property
    def batched(self) -> bool:
        return entry.is_batch(self.metadata)

    @property
    def count(self) -> int:
        return entry.message_count(self.metadata)
