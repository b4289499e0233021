"""Batch unpacking: the numpy scan agrees with the per-message protobuf walk, or declines."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_common.wire import errors as wire_errors
from pulsar_common.wire import pulsar_api_pb2 as pb
from pulsar_spark import unpack


def batch_body(messages: list[dict[str, Any]]) -> bytes:
    """A batch payload as the official clients write it: u32 size | metadata | payload, each."""
    body = b""
    for m in messages:
        single = pb.SingleMessageMetadata(payload_size=len(m["payload"]))
        for name in ("sequence_id", "event_time", "partition_key", "null_value"):
            if m.get(name) is not None:
                setattr(single, name, m[name])
        for key, value in m.get("properties", []):
            single.properties.add(key=key, value=value)
        raw = single.SerializeToString()
        body += struct.pack(">I", len(raw)) + raw + m["payload"]
    return body


def as_lists(layout: unpack.Layout) -> dict[str, Any]:
    return {"starts": layout.starts.tolist(), "ends": layout.ends.tolist(),
            "sequence_ids": layout.sequence_ids.tolist(),
            "event_times": layout.event_times.tolist(), "keys": layout.keys,
            "properties": layout.properties,
            "nulls": None if layout.nulls is None else layout.nulls.tolist()}


plain_messages = st.lists(st.fixed_dictionaries({
    "payload": st.binary(max_size=300),
    "sequence_id": st.none() | st.integers(0, 2**63 - 1),
    "event_time": st.none() | st.integers(0, 2**45),
}), min_size=1, max_size=40)

any_messages = st.lists(st.fixed_dictionaries({
    "payload": st.binary(max_size=60) | st.sampled_from([b"\x00\x00\x00\x05\x18\x01\x40\x01"]),
    "sequence_id": st.none() | st.integers(0, 2**64 - 1),
    "event_time": st.none() | st.integers(0, 2**45),
    "partition_key": st.none() | st.text(max_size=5),
    "null_value": st.none() | st.booleans(),
    "properties": st.lists(st.tuples(st.text(max_size=3), st.text(max_size=3)), max_size=2),
}), min_size=0, max_size=20)


@settings(max_examples=200, deadline=None)
@given(any_messages, st.integers(0, 1000))
def test_unpack_agrees_with_the_protobuf_walk(messages: list[dict[str, Any]], base: int) -> None:
    body = batch_body(messages)
    walked = unpack.walk(body, len(messages), base)
    assert as_lists(unpack.unpack(body, len(messages), base)) == as_lists(walked)
    scanned = unpack.scan(body, len(messages), base)
    if scanned is not None:
        assert as_lists(scanned) == as_lists(walked)


@settings(max_examples=200, deadline=None)
@given(plain_messages, st.integers(0, 1000))
def test_the_scan_reads_batches_without_keys_or_properties(messages: list[dict[str, Any]],
                                                          base: int) -> None:
    # Zero bytes next to a header could look like one; text payloads (JSON) have none.
    messages = [{**m, "payload": m["payload"].replace(b"\x00", b"0")} for m in messages]
    body = batch_body(messages)
    scanned = unpack.scan(body, len(messages), base)
    assert scanned is not None
    walked = unpack.walk(body, len(messages), base)
    assert as_lists(scanned) == as_lists(walked)
    assert scanned.sequence_ids.tolist() == [
        base + i if m["sequence_id"] is None else m["sequence_id"] for i, m in enumerate(messages)]


def test_a_header_lookalike_inside_a_payload_does_not_fool_the_scan() -> None:
    fake = b"{\x00\x00\x00\x03\x18\x02\x40}"
    messages = [{"payload": fake, "sequence_id": 1}, {"payload": b"{}", "sequence_id": 2}]
    body = batch_body(messages)
    assert unpack.scan(body, 2, 0) is None
    layout = unpack.unpack(body, 2, 0)
    assert [body[s:e] for s, e in zip(layout.starts, layout.ends, strict=True)] == [fake, b"{}"]


def test_keys_properties_and_nulls_are_kept_sparse() -> None:
    body = batch_body([{"payload": b"a", "partition_key": "k", "properties": [("p", "v")]},
                       {"payload": b"", "null_value": True}])
    layout = unpack.unpack(body, 2, 10)
    assert layout.keys == ["k", None]
    assert layout.properties == [[("p", "v")], []]
    assert layout.nulls is not None and layout.nulls.tolist() == [False, True]
    plain = unpack.unpack(batch_body([{"payload": b"a"}]), 1, 10)
    assert plain.keys is None and plain.properties is None and plain.nulls is None


def test_an_empty_batch_has_no_messages() -> None:
    assert len(unpack.unpack(b"", 0, 0)) == 0


def test_a_truncated_batch_is_an_error() -> None:
    body = batch_body([{"payload": b"abcdef"}])[:-2]
    assert unpack.scan(body, 1, 0) is None
    with pytest.raises(wire_errors.BatchFormatError):
        unpack.unpack(body, 1, 0)


def test_a_single_message_entry_takes_its_metadata_from_the_entry() -> None:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=4, publish_time=1,
                                  partition_key="k", event_time=9, null_value=True)
    metadata.properties.add(key="a", value="b")
    layout = unpack.single(metadata, 0, 0)
    assert as_lists(layout) == {"starts": [0], "ends": [0], "sequence_ids": [4],
                                "event_times": [9], "keys": ["k"], "properties": [[("a", "b")]],
                                "nulls": [True]}
    assert layout.starts.dtype == np.int64


def test_entries_scanned_together_match_each_entry_alone() -> None:
    batches = [
        [{"payload": b'{"a": 1}', "sequence_id": 5}, {"payload": b"{}"}],
        [{"payload": b"x", "partition_key": "k"}],  # needs the walk
        [],
        [{"payload": b"{\x00\x00\x00\x03\x18\x02\x40}"}, {"payload": b"y", "event_time": 3}],
        [{"payload": b"z" * 300, "sequence_id": 2**40}],
    ]
    bodies = [batch_body(b) for b in batches]
    joined = b"\n".join(bodies)
    spans, at = [], 0
    for body, messages in zip(bodies, batches, strict=True):
        spans.append(unpack.Span(at, at + len(body), len(messages), 100))
        at += len(body) + 1
    together = unpack.unpack_entries(joined, spans)
    for span, body, layout in zip(spans, bodies, together, strict=True):
        alone = as_lists(unpack.walk(body, span.count, 100))
        shifted = {**alone, "starts": [s + span.start for s in alone["starts"]],
                   "ends": [e + span.start for e in alone["ends"]]}
        assert as_lists(layout) == shifted
