"""Entries to Arrow record batches: batches unpacked, payloads decoded by schema, metadata columns.

The decoder collects one Python list per column while it walks the entries,
and decodes payloads a record batch at a time: raw and string payloads go
into Arrow arrays at once, JSON payloads through Arrow's JSON reader (one
call per batch; per message with the json module only when the batch cannot
be read that way, e.g. a payload spans lines), Avro payloads through
fastavro's schemaless reader. Values an entry shares among its messages
(topic, publish time, producer) are repeated, not recomputed.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json
from pulsar_common.wire import compression, entry
from pulsar_common.wire import errors as wire_errors
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_spark import errors

#: An entry as read from storage: (ledger id, entry id, stored bytes).
StoredEntry = tuple[int, int, bytes]

METADATA_COLUMNS = ("__key", "__topic", "__partition", "__message_id", "__publish_time",
                    "__event_time", "__sequence_id", "__producer_name", "__properties")
_U32 = struct.Struct(">I")
_parse_single = pb.SingleMessageMetadata.FromString


class PayloadDecoder:
    """Turns the payloads of one record batch into the payload columns."""

    def __init__(self, schema_type: str, definition: dict[str, Any] | None,
                 fields: list[pa.Field]) -> None:
        self.schema_type = schema_type
        self.fields = fields
        self._avro: Any = None
        self._millis: set[str] = set()
        if schema_type == "avro":
            import fastavro

            self._avro = fastavro.parse_schema(definition or {})
        if schema_type == "json" and definition is not None:
            self._millis = {f["name"] for f in definition.get("fields", [])
                            if _logical(f.get("type")) == "timestamp-millis"}

    def columns(self, payloads: list[Any], nulls: list[bool], where: list[str]) -> list[pa.Array]:
        if self.schema_type == "bytes":
            return [pa.array([None if n else bytes(p) for p, n in zip(payloads, nulls, strict=True)],
                             type=self.fields[0].type)]
        if self.schema_type == "string":
            return [pa.array([None if n else bytes(p).decode("utf-8", "replace")
                              for p, n in zip(payloads, nulls, strict=True)],
                             type=self.fields[0].type)]
        if self.schema_type == "json" and not self._millis and not any(nulls):
            fast = self._json_columns(payloads)
            if fast is not None:
                return fast
        return self._record_columns(payloads, nulls, where)

    def _json_columns(self, payloads: list[Any]) -> list[pa.Array] | None:
        """Arrow's JSON reader over the payloads as JSON lines, or None when that cannot work."""
        data = b"\n".join(payloads)
        if data.count(b"\n") != len(payloads) - 1:
            return None  # some payload spans lines
        try:
            table = pa_json.read_json(
                pa.BufferReader(data),
                read_options=pa_json.ReadOptions(block_size=max(1 << 20, len(data) + 1)),
                parse_options=pa_json.ParseOptions(explicit_schema=pa.schema(self.fields),
                                                   unexpected_field_behavior="ignore"))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None  # the per-message path names the offending message
        if table.num_rows != len(payloads):
            return None
        return [table.column(f.name).combine_chunks().cast(f.type) for f in self.fields]

    def _record_columns(self, payloads: list[Any], nulls: list[bool],
                        where: list[str]) -> list[pa.Array]:
        values: list[list[Any]] = [[] for _ in self.fields]
        names = [f.name for f in self.fields]
        for payload, null, position in zip(payloads, nulls, where, strict=True):
            try:
                record = None if null else self._record(bytes(payload))
            except (ValueError, TypeError, EOFError, IndexError, KeyError) as exc:
                raise errors.SchemaError(
                    f"message {position} does not match the {self.schema_type} schema: {exc}"
                ) from exc
            for index, name in enumerate(names):
                values[index].append(None if record is None else record.get(name))
        return [_array(v, f) for v, f in zip(values, self.fields, strict=True)]

    def _record(self, payload: bytes) -> dict[str, Any]:
        if self._avro is not None:
            import fastavro

            value = fastavro.schemaless_reader(io.BytesIO(payload), self._avro, None)
        else:
            value = json.loads(payload)
            if isinstance(value, dict):
                for name in self._millis:
                    if isinstance(value.get(name), int):
                        value[name] = value[name] * 1000  # Arrow columns hold microseconds
        if not isinstance(value, dict):
            raise ValueError(f"payload is a {type(value).__name__}, not a record")  # noqa: TRY004
        return value


def _array(values: list[Any], field: pa.Field) -> pa.Array:
    try:
        return pa.array(values, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise errors.SchemaError(f"column {field.name} cannot hold the decoded values: {exc}") \
            from exc


def _logical(avro: Any) -> str | None:
    if isinstance(avro, list):
        for branch in avro:
            if branch != "null":
                return _logical(branch)
    if isinstance(avro, dict):
        logical = avro.get("logicalType")
        return str(logical) if logical else None
    return None


class _Columns:
    """Column values of the record batch being built."""

    def __init__(self) -> None:
        self.payloads: list[Any] = []
        self.nulls: list[bool] = []
        self.meta: list[list[Any]] = [[] for _ in METADATA_COLUMNS]

    def __len__(self) -> int:
        return len(self.payloads)


class EntryDecoder:
    """Decodes the entries of one topic partition into record batches of a fixed Arrow schema."""

    def __init__(self, arrow_schema: pa.Schema, schema_type: str,
                 definition: dict[str, Any] | None, topic: str, partition: int,
                 batch_rows: int) -> None:
        self.arrow_schema = arrow_schema
        count = len(arrow_schema) - len(METADATA_COLUMNS)
        self.payload = PayloadDecoder(schema_type, definition, list(arrow_schema)[:count])
        self.topic = topic
        self.partition = partition
        self.batch_rows = batch_rows
        self.messages_decoded = 0
        #: startingTime (inclusive) and endingTime (exclusive) options, epoch ms.
        self.time_range: tuple[int | None, int | None] = (None, None)

    def batches(self, entries: Iterable[StoredEntry]) -> Iterator[pa.RecordBatch]:
        columns = _Columns()
        for ledger_id, entry_id, data in entries:
            try:
                self._append_entry(columns, ledger_id, entry_id, data)
            except (wire_errors.WireError, struct.error, ValueError) as exc:
                raise errors.SchemaError(
                    f"{self.topic}: entry {ledger_id}:{entry_id} is unreadable: {exc}") from exc
            if len(columns) >= self.batch_rows:
                yield self._batch(columns)
                columns = _Columns()
        if len(columns):
            yield self._batch(columns)

    def _append_entry(self, columns: _Columns, ledger_id: int, entry_id: int,
                      data: bytes) -> None:
        metadata = entry.parse_entry_metadata(data)
        low, high = self.time_range
        if (low is not None and metadata.publish_time < low) or \
                (high is not None and metadata.publish_time >= high):
            return
        if len(metadata.encryption_keys) > 0:
            raise wire_errors.EncryptedPayloadError("payload is encrypted for its consumers")
        payload = compression.decompress(metadata.compression, entry.entry_payload(data),
                                         metadata.uncompressed_size)
        if entry.is_batch(metadata):
            singles = self._unpack(columns, memoryview(payload).cast("B"),
                                   metadata.num_messages_in_batch)
        else:
            singles = [metadata]
            columns.payloads.append(payload)
            columns.nulls.append(metadata.null_value)
        self._metadata_columns(columns.meta, metadata, singles, ledger_id, entry_id)

    def _unpack(self, columns: _Columns, view: memoryview, count: int) -> list[Any]:
        singles = []
        pos = 0
        for _ in range(count):
            size = _U32.unpack_from(view, pos)[0]
            start = pos + 4 + size
            single = _parse_single(view[pos + 4 : start])
            end = start + single.payload_size
            if end > len(view):
                raise wire_errors.BatchFormatError("a message runs past the batch")
            columns.payloads.append(view[start:end])
            columns.nulls.append(single.null_value)
            singles.append(single)
            pos = end
        return singles

    def _metadata_columns(self, meta: list[list[Any]], metadata: Any, singles: list[Any],
                          ledger_id: int, entry_id: int) -> None:
        n = len(singles)
        batched = entry.is_batch(metadata)
        meta[0].extend(s.partition_key if s.HasField("partition_key") else None for s in singles)
        meta[1].extend([self.topic] * n)
        meta[2].extend([self.partition] * n)
        prefix = f"{ledger_id}:{entry_id}:{self.partition}:"
        meta[3].extend([prefix + str(i) for i in range(n)] if batched else [prefix + "-1"])
        meta[4].extend([metadata.publish_time * 1000] * n)
        meta[5].extend(s.event_time * 1000 if s.event_time else None for s in singles)
        base = metadata.sequence_id
        if batched:
            meta[6].extend(s.sequence_id if s.HasField("sequence_id") else base + i
                           for i, s in enumerate(singles))
        else:
            meta[6].append(base)
        meta[7].extend([metadata.producer_name] * n)
        meta[8].extend([(p.key, p.value) for p in s.properties] if s.properties else []
                       for s in singles)
        self.messages_decoded += n

    def _batch(self, columns: _Columns) -> pa.RecordBatch:
        try:
            arrays = self.payload.columns(columns.payloads, columns.nulls, columns.meta[3])
        except errors.SchemaError as exc:
            raise errors.SchemaError(f"{self.topic}: {exc}") from exc
        fields = list(self.arrow_schema)[len(arrays):]
        arrays += [_array(v, f) for v, f in zip(columns.meta, fields, strict=True)]
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)
