"""The compaction core, entry by entry: which messages survive and how batches are rewritten."""

from __future__ import annotations

import struct

import pytest
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.topics.compaction import retention
from pulsar_common.wire import batch
from pulsar_common.wire import pulsar_api_pb2 as pb

_U32 = struct.Struct(">I")


def single(position: int, key: str | None, value: bytes) -> tuple[ml.Position, bytes]:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=position, publish_time=1)
    if key is not None:
        metadata.partition_key = key
    encoded = metadata.SerializeToString()
    return ml.Position(1, position), _U32.pack(len(encoded)) + encoded + value


def batched(position: int, messages: list[tuple[str | None, bytes]]) -> tuple[ml.Position, bytes]:
    parts = []
    for key, value in messages:
        one = pb.SingleMessageMetadata(payload_size=len(value))
        if key is not None:
            one.partition_key = key
        encoded = one.SerializeToString()
        parts += [_U32.pack(len(encoded)), encoded, value]
    payload = b"".join(parts)
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=position, publish_time=1,
                                  num_messages_in_batch=len(messages),
                                  uncompressed_size=len(payload))
    encoded = metadata.SerializeToString()
    return ml.Position(1, position), _U32.pack(len(encoded)) + encoded + payload


def compact(entries: list[tuple[ml.Position, bytes]], retain_null_key: bool = False,
            ) -> dict[str | None, bytes]:
    """Run both phases; the surviving (key -> value) of the rewritten entries."""
    latest = retention.LatestByKey()
    for position, data in entries:
        # Phase one as the compactor runs it: the fast path, which must agree with the
        # message-by-message one.
        assert latest.add_entry(position, data) == len(
            retention.keyed_messages(retention.open_entry(position, data)))
    survivors: dict[str | None, bytes] = {}
    for position, data in entries:
        kept = retention.compact_entry(retention.open_entry(position, data), latest,
                                       retain_null_key)
        if kept is None:
            continue
        _, messages = batch.read_messages(kept)
        for message in messages:
            key = message.metadata.partition_key if message.metadata.HasField(
                "partition_key") else None
            assert key not in survivors, "a key survives once"
            survivors[key] = message.payload
    return survivors


@pytest.mark.parametrize(("entries", "expected"), [
    # The latest value of each key survives.
    ([single(0, "a", b"1"), single(1, "b", b"1"), single(2, "a", b"2")],
     {"a": b"2", "b": b"1"}),
    # An empty value deletes the key...
    ([single(0, "a", b"1"), single(1, "a", b"")], {}),
    # ...until a later value brings it back.
    ([single(0, "a", b"1"), single(1, "a", b""), single(2, "a", b"3")], {"a": b"3"}),
    # Messages without a key are dropped by default (topicCompactionRetainNullKey=false).
    ([single(0, None, b"x"), single(1, "a", b"1")], {"a": b"1"}),
    # Inside a batch, message by message.
    ([batched(0, [("a", b"1"), ("b", b"1"), ("a", b"2")]), batched(1, [("b", b"")])],
     {"a": b"2"}),
    ([batched(0, [("a", b"1"), ("b", b"1")]), single(1, "a", b"2")], {"a": b"2", "b": b"1"}),
])
def test_compaction_keeps_the_latest_live_value_per_key(entries, expected):
    assert compact(entries) == expected


def test_messages_without_a_key_are_kept_when_asked():
    assert compact([single(0, None, b"x"), single(1, "a", b"1")], retain_null_key=True) == {
        None: b"x", "a": b"1"}


def test_an_entry_whose_messages_all_survive_is_kept_byte_for_byte():
    position, data = batched(0, [("a", b"1"), ("b", b"1")])
    latest = retention.LatestByKey()
    entry = retention.open_entry(position, data)
    for message in retention.keyed_messages(entry):
        latest.add(message)
    assert retention.compact_entry(entry, latest, False) == data
    assert latest.positions() == {position}


def test_a_rewritten_batch_is_uncompressed_and_counts_its_survivors():
    position, data = batched(0, [("a", b"1"), ("b", b"1"), ("a", b"2")])
    latest = retention.LatestByKey()
    entry = retention.open_entry(position, data)
    for message in retention.keyed_messages(entry):
        latest.add(message)
    kept = retention.compact_entry(entry, latest, False)
    assert kept is not None
    metadata, messages = batch.read_messages(kept)
    assert metadata.num_messages_in_batch == 2
    assert metadata.compression == pb.NONE
    assert [m.payload for m in messages] == [b"1", b"2"]


def test_the_fast_and_the_message_by_message_phase_one_agree():
    entries = [batched(0, [("a", b"1"), ("b", b"1"), (None, b"x")]), single(1, "a", b""),
               batched(2, [("b", b""), ("c", b"3"), ("b", b"4")]), single(3, "d", b"5")]
    fast, slow = retention.LatestByKey(), retention.LatestByKey()
    for position, data in entries:
        fast.add_entry(position, data)
        for message in retention.keyed_messages(retention.open_entry(position, data)):
            slow.add(message)
    assert fast.positions() == slow.positions() == {ml.Position(1, 2), ml.Position(1, 3)}
    assert len(fast) == len(slow) == 3  # b, c, d; a was deleted


def test_an_unreadable_entry_is_left_to_the_slow_path():
    assert retention.LatestByKey().add_entry(ml.Position(1, 0), b"\x00\x00\x00\x09bad") is None
