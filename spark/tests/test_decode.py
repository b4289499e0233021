"""Entries to Arrow: batches unpacked, metadata columns filled, payload schemas applied."""

from __future__ import annotations

import io
import json
import struct
import zlib

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
    return decode.EntryDecoder(schema, schema_type, definition, topic="persistent://t/n/x",
                               partition=2, batch_rows=rows)


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


def _batch_entry(payloads: list[bytes], *, sequence_id: int = 7, compress: bool = False,
                 null_at: int | None = None) -> bytes:
    """A batch entry as the official client writes one: payload_size and sequence_id only."""
    body = b""
    for i, payload in enumerate(payloads):
        single = pb.SingleMessageMetadata(payload_size=len(payload), sequence_id=sequence_id + i)
        if i == null_at:
            single.null_value = True
        raw = single.SerializeToString()
        body += struct.pack(">I", len(raw)) + raw + payload
    metadata = pb.MessageMetadata(producer_name="prod", sequence_id=sequence_id,
                                  publish_time=2_000, num_messages_in_batch=len(payloads))
    if compress:
        metadata.compression = pb.ZLIB
        metadata.uncompressed_size = len(body)
        body = zlib.compress(body)
    raw = metadata.SerializeToString()
    return struct.pack(">I", len(raw)) + raw + body


READING = {"type": "record", "name": "R", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"]},
    {"name": "value", "type": ["null", "double"]}]}
READING_FIELDS = [("id", pa.int64()), ("note", pa.string()), ("value", pa.float64())]
AWKWARD_JSON = [
    b'{"id": 1, "note": "line\\nbreak", "value": 1.5}',  # escaped newline inside a string
    b'{\n  "id": 2,\r\n  "note": "pretty"\n}',  # raw newlines and CR between tokens
    b'{"id": 3}',  # missing fields are null
    '{"id": 4, "note": "caf\u00e9 \u2603", "value": -0.0, "extra": [1]}'.encode(),
    b'  {"id": 5, "value": 1e3}  ',
]


def _reference_rows(payloads: list[bytes]) -> list[tuple]:
    return [(r["id"], r.get("note"), r.get("value")) for r in map(json.loads, payloads)]


def test_json_batches_decode_like_the_json_module():
    decoder = _decoder(READING_FIELDS, "json", READING, rows=1000)
    entries = [(1, 0, _batch_entry(AWKWARD_JSON)),
               (1, 1, _entry([AWKWARD_JSON[1]], batch=False)),
               (1, 2, _batch_entry(AWKWARD_JSON[::-1], sequence_id=100, compress=True)),
               (1, 3, _batch_entry([]))]
    (batch,) = decoder.batches(entries)
    table = batch.to_pydict()
    rows = list(zip(table["id"], table["note"], table["value"], strict=True))
    assert rows == _reference_rows(AWKWARD_JSON + [AWKWARD_JSON[1]] + AWKWARD_JSON[::-1])
    assert table["__message_id"][:2] == ["1:0:2:0", "1:0:2:1"]
    assert table["__message_id"][5:7] == ["1:1:2:-1", "1:2:2:0"]
    assert table["__sequence_id"] == [7, 8, 9, 10, 11, 7, 100, 101, 102, 103, 104]
    assert set(table["__producer_name"]) == {"prod", "p"}
    assert table["__properties"] == [[]] * 11 and table["__key"] == [None] * 11
    assert table["__event_time"] == [None] * 11
    assert decoder.messages_decoded == 11


def test_compressed_and_plain_batches_decode_alike():
    payloads = [json.dumps({"id": i, "note": "x" * i}).encode() for i in range(50)]
    plain, packed = (list(_decoder(READING_FIELDS, "json", READING, rows=1000).batches(
        [(3, 0, _batch_entry(payloads, compress=c))])) for c in (False, True))
    assert plain[0].to_pydict() == packed[0].to_pydict()


def test_a_bad_payload_in_a_batch_is_named_by_its_batch_index():
    decoder = _decoder(READING_FIELDS, "json", READING)
    with pytest.raises(errors.SchemaError, match="message 9:4:2:1 "):
        list(decoder.batches([(9, 4, _batch_entry([b'{"id": 1}', b'{"id": "x"'])),]))


def test_null_values_in_json_string_and_bytes_batches():
    for schema_type, fields, definition in (
            ("json", READING_FIELDS, READING), ("string", [("value", pa.string())], None),
            ("bytes", [("value", pa.binary())], None)):
        decoder = _decoder(fields, schema_type, definition)
        (batch,) = decoder.batches([(1, 0, _batch_entry([b'{"id": 1}', b"", b'{"id": 3}'],
                                                        null_at=1))])
        column = batch.column(0).to_pylist()
        assert column[1] is None and column[0] in (1, '{"id": 1}', b'{"id": 1}')


def test_string_payloads_that_are_not_utf8_get_replacement_characters():
    decoder = _decoder([("value", pa.string())], "string")
    (batch,) = decoder.batches([(1, 0, _batch_entry([b"ok", b"\xff\xfebad", b"caf\xc3\xa9"]))])
    assert batch.column(0).to_pylist() == ["ok", "\ufffd\ufffdbad", "caf\u00e9"]
    (raw,) = _decoder([("value", pa.binary())], "bytes").batches(
        [(1, 0, _batch_entry([b"\x00\x00\x00\x05\x18", b""]))])
    assert raw.column(0).to_pylist() == [b"\x00\x00\x00\x05\x18", b""]


def test_decode_json_lines_keeps_one_line_per_message():
    decoder = _decoder(READING_FIELDS, "json", READING)
    pending = [decoder._pending(1, i, _batch_entry(AWKWARD_JSON)) for i in range(2)]
    body = b"\n".join(p.body for p in pending)
    chunks = decoder._chunks(body, pending, [0, len(pending[0].body) + 1])
    lines = decode.json_lines(body, chunks).split(b"\n")
    assert len(lines) == 2 * len(AWKWARD_JSON)
    assert [json.loads(line) for line in lines] == [json.loads(p) for p in AWKWARD_JSON] * 2


def test_an_unreadable_entry_is_named():
    decoder = _decoder([("value", pa.binary())], "bytes")
    good = _batch_entry([b"a"])
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=1, publish_time=1,
                                  num_messages_in_batch=3)
    raw = metadata.SerializeToString()
    bad = struct.pack(">I", len(raw)) + raw + b"\x00\x00\x00\x02\x18\x09abc"
    with pytest.raises(errors.SchemaError, match="entry 4:1 is unreadable"):
        list(decoder.batches([(4, 0, good), (4, 1, bad), (4, 2, good)]))


def test_a_subset_of_columns_in_any_order():
    schema = pa.schema([("__sequence_id", pa.int64()), ("id", pa.int64()),
                        ("__topic", pa.string())])
    decoder = decode.EntryDecoder(schema, "json", READING, topic="persistent://t/n/x",
                                  partition=2, batch_rows=100)
    (batch,) = decoder.batches([(1, 0, _batch_entry([b'{"id": 5}', b'{"id": 6}']))])
    assert batch.schema == schema
    assert batch.to_pydict() == {"__sequence_id": [7, 8], "id": [5, 6],
                                 "__topic": ["persistent://t/n/x"] * 2}
    # Without payload columns the payloads are not decoded: not even a bad one fails.
    meta_only = decode.EntryDecoder(pa.schema([("__message_id", pa.string())]), "json", READING,
                                    topic="persistent://t/n/x", partition=2, batch_rows=100)
    (ids,) = meta_only.batches([(1, 0, _batch_entry([b"not json", b"{}"]))])
    assert ids.column(0).to_pylist() == ["1:0:2:0", "1:0:2:1"]
