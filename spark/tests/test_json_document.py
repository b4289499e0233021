"""JSON payloads read as one document: only the bytes between payloads are blanked."""

from __future__ import annotations

import json
import struct

import pyarrow as pa
import pytest
from pulsar_common.wire import pulsar_api_pb2 as pb
from pulsar_spark import decode, errors

FIELDS = [("id", pa.int64()), ("note", pa.string())]
DEFINITION = {"type": "record", "name": "R", "fields": [
    {"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"]}]}


def _batch_entry(payloads: list[bytes]) -> bytes:
    body = b""
    for i, payload in enumerate(payloads):
        raw = pb.SingleMessageMetadata(payload_size=len(payload), sequence_id=i).SerializeToString()
        body += struct.pack(">I", len(raw)) + raw + payload
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                  num_messages_in_batch=len(payloads)).SerializeToString()
    return struct.pack(">I", len(metadata)) + metadata + body


def _decoder() -> decode.EntryDecoder:
    return decode.EntryDecoder(pa.schema([*FIELDS, ("__message_id", pa.string())]), "json",
                               DEFINITION, topic="persistent://t/n/x", partition=0,
                               batch_rows=1000)


def test_only_the_bytes_between_payloads_are_blanked():
    payloads = [b'{"id": 1,\n"note": "a"}', b'{"id": 2}\r\n', b'\x00{"id": 3}']
    decoder = _decoder()
    pending = [decoder._pending(1, i, _batch_entry(payloads)) for i in range(2)]
    body = b"\n".join(p.body for p in pending)
    chunks = decoder._chunks(body, pending, [0, len(pending[0].body) + 1])
    document = decode.json_document(bytearray(body), chunks)
    kept = bytearray(b" " * len(body))
    for chunk in chunks:
        for start, end in zip(chunk.layout.starts.tolist(), chunk.layout.ends.tolist(),
                              strict=True):
            kept[start:end] = body[start:end]
    assert document == kept


def test_records_spread_over_lines_are_read_like_the_json_module():
    payloads = [b'{\n"id": 1,\r\n "note":\n"x"\n}', b'\r\n{"id": 2}\n', b'{"note": "y", "id": 3}']
    (batch,) = _decoder().batches([(1, 0, _batch_entry(payloads))])
    expected = [json.loads(p) for p in payloads]
    assert batch.to_pydict()["id"] == [r["id"] for r in expected]
    assert batch.to_pydict()["note"] == [r.get("note") for r in expected]


def test_raw_line_breaks_inside_strings_still_read_as_spaces():
    payloads = [b'{"id": 1, "note": "a\nb\rc"}', b'{"id": 2, "note": "d"}']
    (batch,) = _decoder().batches([(1, 0, _batch_entry(payloads))])
    assert batch.to_pydict()["note"] == ["a b c", "d"]


def test_two_records_in_one_payload_name_the_message():
    payloads = [b'{"id": 1}', b'{"id": 2} {"id": 3}']
    with pytest.raises(errors.SchemaError, match="message 4:5:0:1"):
        list(_decoder().batches([(4, 5, _batch_entry(payloads))]))


@pytest.mark.parametrize(("payloads", "bad"), [
    # Two records in one payload beside an empty one: as many records as messages, misaligned.
    ([b'{"id": 1} {"id": 2}', b""], 0),
    # A record cut over two payloads beside two records in one.
    ([b'{"id": 1, "note":', b'"x"}', b'{"id": 3} {"id": 4}'], 0),
    # Arrow's reader takes a null as a record of nulls (and crashes on one leading the block).
    ([b'{"id": 1}', b"null"], 1),
    ([b"null", b'{"id": 1}'], 0),
])
def test_payloads_that_are_not_one_record_each_name_the_message(payloads, bad):
    with pytest.raises(errors.SchemaError, match=f"message 4:5:0:{bad} "):
        list(_decoder().batches([(4, 5, _batch_entry(payloads))]))
