"""check_entry on batches: the hand-read record framing agrees with protobuf's own parse."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pulsar_common.wire import errors, frame, validation
from pulsar_common.wire import pulsar_api_pb2 as pb


def _record(payload: bytes, key: str | None = None, props: dict[str, str] | None = None,
            event_time: int | None = None, sequence_id: int | None = None) -> bytes:
    single = pb.SingleMessageMetadata(payload_size=len(payload))
    if sequence_id is not None:
        single.sequence_id = sequence_id
    if key is not None:
        single.partition_key = key
    for k, v in (props or {}).items():
        single.properties.add(key=k, value=v)
    if event_time is not None:
        single.event_time = event_time
    meta = single.SerializeToString()
    return struct.pack(">I", len(meta)) + meta + payload


def _entry(records: list[bytes], count: int | None = None) -> bytes:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                  num_messages_in_batch=len(records) if count is None else count)
    return frame.encode_entry(metadata, b"".join(records))


records_strategy = st.lists(st.builds(
    _record, st.binary(max_size=300), st.none() | st.text(max_size=20),
    st.none() | st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
    st.none() | st.integers(min_value=0, max_value=2**63 - 1),
    st.none() | st.integers(min_value=0, max_value=2**63 - 1)), min_size=1, max_size=20)


@given(records_strategy)
def test_well_formed_batches_pass(records: list[bytes]) -> None:
    assert validation.check_entry(_entry(records)).num_messages_in_batch == len(records)


@given(records_strategy, st.data())
def test_a_batch_cut_short_or_overcounted_fails(records: list[bytes], data: st.DataObject) -> None:
    whole = b"".join(records)
    cut = data.draw(st.integers(min_value=0, max_value=len(whole) - 1))
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                  num_messages_in_batch=len(records))
    with pytest.raises(errors.WireError):
        validation.check_entry(frame.encode_entry(metadata, whole[:cut]))
    with pytest.raises(errors.WireError):
        validation.check_entry(_entry(records, count=len(records) + 1))


@pytest.mark.parametrize("record", [
    struct.pack(">I", 2) + b"\x18\x80",                     # varint cut at the metadata's end
    struct.pack(">I", 2) + b"\x0f\x01",                     # wire type 7 does not exist
    struct.pack(">I", 3) + b"\x12\x05a",                    # a key longer than the metadata
    struct.pack(">I", 1) + b"\x08",                         # no payload_size at all
    struct.pack(">I", 6) + b"\x18\xff\xff\xff\xff\x0f",     # payload_size beyond an int32
    struct.pack(">I", 2) + b"\x18\x7f",                     # payload of 127 bytes: not there
    # a sequence_id, then a second payload_size that wins (127 bytes: not there)
    struct.pack(">I", 6) + b"\x18\x01\x40\x05\x18\x7f" + b"x",
    struct.pack(">I", 4) + b"\x18\x01\x40\x85" + b"x",    # sequence_id varint cut short
])
def test_records_that_would_take_a_reader_outside_the_batch_fail(record: bytes) -> None:
    with pytest.raises(errors.BatchFormatError):
        validation.check_entry(_entry([record]))
