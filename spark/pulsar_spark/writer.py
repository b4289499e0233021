"""Writing a DataFrame to a topic with the official client: at-least-once.

Each Spark task opens its own producer, sends its rows asynchronously and
flushes before it reports success; a task that fails after sending some rows
is retried by Spark and sends them again, so a topic may receive a row more
than once (at-least-once, as with Kafka's sink). Columns: `value` (binary or
string) is the payload unless the `schema` option names a record schema,
whose fields are then encoded from the columns of the same names (Avro
binary or JSON text). `__key`, `__properties` and `__event_time` become the
message's key, properties and event time. With schema.type int8..int64,
float, double or boolean, `value` is encoded as Pulsar encodes those types.
Messages are sent without a schema (BYTES), which a topic with a schema
accepts unless the broker enforces schema validation.
"""

from __future__ import annotations

import datetime
import io
import json
import struct
from collections.abc import Iterator
from typing import Any

from pyspark.sql import datasource as ds
from pyspark.sql import types as T

from pulsar_spark import errors, options

#: struct formats of the fixed-width primitive payloads (Pulsar encodes them big-endian).
PRIMITIVE_FORMATS = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q",
                     "float": ">f", "double": ">d", "boolean": ">?"}
#: Messages a task's producer keeps unacknowledged before send_async waits.
PENDING_MESSAGES_MAX = 10_000


class WriteCommit(ds.WriterCommitMessage):
    def __init__(self, messages: int) -> None:
        self.messages = messages


class PulsarWriter(ds.DataSourceWriter):
    def __init__(self, raw: dict[str, str], spark_schema: T.StructType) -> None:
        opts = {k.lower(): v for k, v in raw.items()}
        self.service_url = opts.get("service.url")
        if not self.service_url:
            raise errors.OptionError("writing needs option service.url (pulsar://host:6650)")
        if "topic" not in opts:
            raise errors.OptionError("writing needs option topic")
        self.topic = options.full_topic_name(opts["topic"])
        read = {k: v for k, v in raw.items() if k.lower() in ("schema", "schema.type")}
        parsed = options.parse_read_options({"admin.url": "-", "topic": self.topic, **read})
        self.schema_type = parsed.schema_type
        self.definition = parsed.schema_definition
        names = spark_schema.fieldNames()
        if self.definition is None and "value" not in names:
            raise errors.OptionError("writing without a record schema needs a `value` column")
        self.columns = names
        self.batching = opts.get("batching", "true").lower() != "false"

    def write(self, iterator: Iterator[Any]) -> WriteCommit:
        import pulsar

        client = pulsar.Client(self.service_url)
        try:
            producer = client.create_producer(
                self.topic, batching_enabled=self.batching,
                max_pending_messages=PENDING_MESSAGES_MAX, block_if_queue_full=True)
            failures: list[str] = []

            def done(result: Any, _msg_id: Any) -> None:
                if result != pulsar.Result.Ok:
                    failures.append(str(result))

            count = 0
            encode = self._encoder()
            for row in iterator:
                producer.send_async(encode(row), done, **_metadata(row))
                count += 1
            producer.flush()
            producer.close()
            if failures:
                raise errors.PulsarSparkError(
                    f"{len(failures)} of {count} messages to {self.topic} failed: {failures[0]}")
            return WriteCommit(count)
        finally:
            client.close()

    def _encoder(self) -> Any:
        if self.schema_type in options.PRIMITIVE_TYPES:
            packer = struct.Struct(PRIMITIVE_FORMATS[self.schema_type])
            return lambda row: packer.pack(row["value"])
        if self.definition is None:  # bytes, string, or no schema option (auto)
            return lambda row: _as_bytes(row["value"])
        fields = [f["name"] for f in self.definition["fields"]]
        if self.schema_type == "json":
            return lambda row: json.dumps({n: _jsonable(row[n]) for n in fields}).encode()
        import fastavro

        parsed = fastavro.parse_schema(self.definition or {})

        def avro(row: Any) -> bytes:
            out = io.BytesIO()
            fastavro.schemaless_writer(out, parsed, {n: row[n] for n in fields})
            return out.getvalue()

        return avro


def _as_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, datetime.date):
        return (value - datetime.date(1970, 1, 1)).days
    if isinstance(value, bytes | bytearray):
        return value.decode("utf-8", "replace")
    return value


def _metadata(row: Any) -> dict[str, Any]:
    fields = row.asDict() if hasattr(row, "asDict") else {}
    result: dict[str, Any] = {}
    if fields.get("__key") is not None:
        result["partition_key"] = str(fields["__key"])
    if fields.get("__properties"):
        result["properties"] = {str(k): str(v) for k, v in fields["__properties"].items()}
    event_time = fields.get("__event_time")
    if isinstance(event_time, datetime.datetime):
        result["event_timestamp"] = int(event_time.timestamp() * 1000)
    return result
