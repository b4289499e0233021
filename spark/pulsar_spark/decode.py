"""Entries to Arrow record batches: batches unpacked, payloads decoded by schema, metadata columns.

Columns are collected as one Python list per column and turned into Arrow
arrays once per record batch; no row objects are built. Payload decoding is
per message by nature (Avro through fastavro's schemaless reader, JSON
through the json module); raw and string payloads are copied straight in.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from pulsar_common.wire import batch as wire_batch
from pulsar_common.wire import errors as wire_errors
from pulsar_spark import errors

#: An entry as read from storage: (ledger id, entry id, stored bytes).
StoredEntry = tuple[int, int, bytes]

METADATA_COLUMNS = ("__key", "__topic", "__partition", "__message_id", "__publish_time",
                    "__event_time", "__sequence_id", "__producer_name", "__properties")


class PayloadDecoder:
    """Turns one payload into values appended to the payload columns."""

    def __init__(self, schema_type: str, definition: dict[str, Any] | None,
                 field_names: list[str]) -> None:
        self.schema_type = schema_type
        self.field_names = field_names
        self._avro: Any = None
        self._millis = set()
        if schema_type == "avro":
            import fastavro

            self._avro = fastavro.parse_schema(definition)
        if schema_type == "json" and definition is not None:
            self._millis = {f["name"] for f in definition.get("fields", [])
                            if _logical(f.get("type")) == "timestamp-millis"}

    def append(self, columns: list[list[Any]], payload: bytes, null_value: bool) -> None:
        if self.schema_type == "bytes":
            columns[0].append(None if null_value else payload)
            return
        if self.schema_type == "string":
            columns[0].append(None if null_value else payload.decode("utf-8", "replace"))
            return
        record = None if null_value else self._record(payload)
        for index, name in enumerate(self.field_names):
            columns[index].append(None if record is None else record.get(name))

    def _record(self, payload: bytes) -> dict[str, Any]:
        if self._avro is not None:
            import fastavro

            value = fastavro.schemaless_reader(io.BytesIO(payload), self._avro, None)
        else:
            value = json.loads(payload)
            for name in self._millis:
                if isinstance(value.get(name), int):
                    value[name] = value[name] * 1000  # Arrow columns hold microseconds
        if not isinstance(value, dict):
            raise ValueError(f"payload is a {type(value).__name__}, not a record")
        return value


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
                 definition: dict[str, Any] | None, topic: str, partition: int,
                 batch_rows: int) -> None:
        self.arrow_schema = arrow_schema
        self.payload_count = len(arrow_schema) - len(METADATA_COLUMNS)
        names = arrow_schema.names[: self.payload_count]
        self.payload = PayloadDecoder(schema_type, definition, names)
        self.topic = topic
        self.partition = partition
        self.batch_rows = batch_rows
        self.messages_decoded = 0
        #: startingTime (inclusive) and endingTime (exclusive) options, epoch ms.
        self.time_range: tuple[int | None, int | None] = (None, None)

    def batches(self, entries: Iterable[StoredEntry]) -> Iterator[pa.RecordBatch]:
        columns = self._empty()
        for ledger_id, entry_id, data in entries:
            self._append_entry(columns, ledger_id, entry_id, data)
            if len(columns[-1]) >= self.batch_rows:
                yield self._batch(columns)
                columns = self._empty()
        if columns[-1]:
            yield self._batch(columns)

    def _empty(self) -> list[list[Any]]:
        return [[] for _ in range(len(self.arrow_schema))]

    def _append_entry(self, columns: list[list[Any]], ledger_id: int, entry_id: int,
                      data: bytes) -> None:
        try:
            metadata, messages = wire_batch.read_messages(data)
        except wire_errors.WireError as exc:
            raise errors.SchemaError(
                f"{self.topic}: entry {ledger_id}:{entry_id} is unreadable: {exc}") from exc
        low, high = self.time_range
        if (low is not None and metadata.publish_time < low) or \
                (high is not None and metadata.publish_time >= high):
            return
        n = self.payload_count
        meta = columns[n:]
        publish_us = metadata.publish_time * 1000
        producer = metadata.producer_name
        base_sequence = metadata.sequence_id
        prefix = f"{ledger_id}:{entry_id}:{self.partition}:"
        for message in messages:
            single = message.metadata
            try:
                self.payload.append(columns, message.payload,
                                    single.HasField("null_value") and single.null_value)
            except (ValueError, TypeError, EOFError, IndexError, KeyError) as exc:
                raise errors.SchemaError(
                    f"{self.topic}: message {ledger_id}:{entry_id}:{message.batch_index} does not "
                    f"match the {self.payload.schema_type} schema: {exc}") from exc
            meta[0].append(single.partition_key if single.HasField("partition_key") else None)
            meta[1].append(self.topic)
            meta[2].append(self.partition)
            meta[3].append(prefix + str(message.batch_index))
            meta[4].append(publish_us)
            meta[5].append(single.event_time * 1000 if single.event_time else None)
            meta[6].append(single.sequence_id if single.HasField("sequence_id")
                           else base_sequence + max(message.batch_index, 0))
            meta[7].append(producer)
            meta[8].append([(p.key, p.value) for p in single.properties])
        self.messages_decoded += len(messages)

    def _batch(self, columns: list[list[Any]]) -> pa.RecordBatch:
        arrays = []
        for values, field in zip(columns, self.arrow_schema, strict=True):
            try:
                arrays.append(pa.array(values, type=field.type))
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
                raise errors.SchemaError(
                    f"{self.topic}: column {field.name} cannot hold the decoded values: {exc}"
                ) from exc
        return pa.RecordBatch.from_arrays(arrays, schema=self.arrow_schema)
