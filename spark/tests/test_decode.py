"""Entries to Arrow: batches unpacked, metadata columns filled, payload schemas applied."""

from __future__ import annotations

import io
import json
import struct

import fastavro
import pyarrow as pa
import pytest
from pulsar_common.wire import pulsar_api_pb2 as pb
from pulsar_spark import decode, errors

META = [("__key", pa.string()), ("__topic", pa.string()), ("__partition", pa.int32()),
        ("__message_id", pa.string()), ("__publish_time", pa.timestamp("us", tz="UTC")),
        ("__event_time", pa.timestamp("us", tz="UTC")), ("__sequence_id", pa.int64()),
        ("__producer_name", pa.string()), ("__properties", pa.map_(pa.string(), pa.string()))]


def _entry(payloads: list[bytes], *, batch: bool, key: str | None = None) -> bytes:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=7, publish_time=1_000)
    if batch:
        body = b""
        for i, payload in enumerate(payloads):
            single = pb.SingleMessageMetadata(payload_size=len(payload), sequence_id=7 + i,
                                              event_time=5_000 + i)
            single.properties.add(key="i", value=str(i))
            if key:
                single.partition_key = key
            raw = single.SerializeToString()
            body += struct.pack(">I", len(raw)) + raw + payload
        metadata.num_messages_in_batch = len(payloads)
    else:
        (body,) = payloads
        if key:
            metadata.partition_key = key
    raw = metadata.SerializeToString()
    return struct.pack(">I", len(raw)) + raw + body


def _decoder(payload_fields, schema_type, definition=None, rows=100):
    schema = pa.schema(payload_fields + META)
    return decode.EntryDecoder(schema, schema_type, definition, "persistent://t/n/x", 2, rows)


def test_batched_and_single_entries_fill_metadata_columns():
    decoder = _decoder([("value", pa.string())], "string")
    entries = [(5, 0, _entry([b"a", b"b"], batch=True, key="k")),
               (5, 1, _entry([b"c"], batch=False))]
    (batch,) = list(decoder.batches(entries))
    table = batch.to_pydict()
    assert table["value"] == ["a", "b", "c"]
    assert table["__key"] == ["k", "k", None]
    assert table["__message_id"] == ["5:0:2:0", "5:0:2:1", "5:1:2:-1"]
    assert table["__sequence_id"] == [7, 8, 7]
    assert table["__properties"] == [[("i", "0")], [("i", "1")], []]
    assert [t is None for t in table["__event_time"]] == [False, False, True]
    assert table["__partition"] == [2, 2, 2]
    assert decoder.messages_decoded == 3


def test_record_batches_are_cut_at_the_row_limit():
    decoder = _decoder([("value", pa.binary())], "bytes", rows=2)
    entries = [(1, i, _entry([b"x"], batch=False)) for i in range(5)]
    assert [b.num_rows for b in decoder.batches(entries)] == [2, 2, 1]


def test_avro_and_json_payloads_become_columns():
    definition = {"type": "record", "name": "R", "fields": [
        {"name": "a", "type": "long"}, {"name": "b", "type": ["null", "string"]}]}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(definition), {"a": 3, "b": None})
    fields = [("a", pa.int64()), ("b", pa.string())]
    (avro_batch,) = _decoder(fields, "avro", definition).batches(
        [(1, 0, _entry([out.getvalue()], batch=False))])
    assert avro_batch.to_pydict()["a"] == [3] and avro_batch.to_pydict()["b"] == [None]
    (json_batch,) = _decoder(fields, "json", definition).batches(
        [(1, 0, _entry([json.dumps({"a": 4, "b": "x"}).encode()], batch=False))])
    assert json_batch.to_pydict()["b"] == ["x"]


def test_a_payload_that_does_not_match_the_schema_names_the_message():
    definition = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}
    decoder = _decoder([("a", pa.int64())], "json", definition)
    with pytest.raises(errors.SchemaError, match="message 9:4:2:-1"):
        list(decoder.batches([(9, 4, _entry([b"not json"], batch=False))]))
