"""Stored entries, MESSAGE frames built from them, and batch unpacking."""

from __future__ import annotations

import base64
import struct
import zlib

import cramjam
import pytest
from pulsar_common.wire import batch, compression, entry, errors, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def u32(value: int) -> bytes:
    return struct.pack(">I", value)


def single(payload: bytes, **fields: object) -> bytes:
    """One record of a batch payload: size | SingleMessageMetadata | payload."""
    meta = pb.SingleMessageMetadata(payload_size=len(payload), **fields).SerializeToString()
    return u32(len(meta)) + meta + payload


def batch_payload() -> bytes:
    return (
        single(b"first", partition_key="k1", sequence_id=10)
        + single(b"", properties=[pb.KeyValue(key="a", value="b")], null_value=True)
        + single(b"third", ordering_key=b"\x00\x01", event_time=77)
    )


def stored(metadata: pb.MessageMetadata, payload: bytes) -> bytes:
    return frame.encode_entry(metadata, payload)


def metadata(**fields: object) -> pb.MessageMetadata:
    return pb.MessageMetadata(producer_name="prod", sequence_id=10, publish_time=5, **fields)


# ---------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------


def test_entry_metadata_is_parsed_without_reading_the_payload() -> None:
    data = stored(metadata(partition_key="k"), b"\xff" * 1000)
    parsed = entry.parse_entry_metadata(data)
    assert (parsed.producer_name, parsed.sequence_id, parsed.partition_key) == ("prod", 10, "k")
    raw_metadata, payload = entry.split_entry(data)
    assert bytes(raw_metadata) == metadata(partition_key="k").SerializeToString()
    assert bytes(payload) == b"\xff" * 1000
    assert bytes(entry.entry_payload(memoryview(data))) == b"\xff" * 1000


@pytest.mark.parametrize(
    "data",
    [b"\x00\x00", u32(100) + b"short", u32(3) + b"\xff\xff\xff", u32(2) + b"\x08\x01"],
    ids=["no-size", "size-past-end", "garbage", "missing-required"],
)
def test_bad_entry_metadata_raises_metadata_parse_error(data: bytes) -> None:
    with pytest.raises(errors.MetadataParseError):
        entry.parse_entry_metadata(data)


def test_batch_is_recognised_by_num_messages_in_batch() -> None:
    assert not entry.is_batch(metadata())
    assert entry.message_count(metadata()) == 1
    assert entry.is_batch(metadata(num_messages_in_batch=1))
    assert entry.message_count(metadata(num_messages_in_batch=40)) == 40


def test_sticky_key_prefers_ordering_key_then_partition_key() -> None:
    assert entry.sticky_key(metadata()) is None
    assert entry.sticky_key(metadata(partition_key="pk")) == b"pk"
    assert entry.sticky_key(metadata(partition_key="pk", ordering_key=b"ok")) == b"ok"
    encoded = base64.b64encode(b"\x00\xff").decode()
    b64 = metadata(partition_key=encoded, partition_key_b64_encoded=True)
    assert entry.sticky_key(b64) == b"\x00\xff"


def test_message_id_sends_earliest_as_uint64_all_ones() -> None:
    mid = entry.message_id(-1, -1)
    assert (mid.ledgerId, mid.entryId) == (2**64 - 1, 2**64 - 1)
    assert not mid.HasField("partition") and not mid.HasField("batch_index")
    full = entry.message_id(3, 4, partition=2, batch_index=1, batch_size=5, ack_set=[6])
    assert (full.partition, full.batch_index, full.batch_size, list(full.ack_set)) == (2, 1, 5, [6])


def test_message_frame_from_a_stored_entry_decodes_to_the_same_entry() -> None:
    data = stored(metadata(), b"payload")
    crc = frame.checksum(data)
    header, body = entry.message_frame_parts(
        9, 7, 3, data, entry_checksum=crc, redelivery_count=2, partition=1
    )
    assert body is data  # the stored bytes go out as they are
    [decoded] = frame.FrameDecoder().feed(header + bytes(body))
    message = decoded.command.message
    assert decoded.command.type == T.MESSAGE
    assert (message.consumer_id, message.redelivery_count) == (9, 2)
    assert (message.message_id.ledgerId, message.message_id.entryId) == (7, 3)
    assert message.message_id.partition == 1
    assert bytes(decoded.entry or b"") == data
    assert decoded.checksum == crc and decoded.checksum_valid


def test_message_frame_checksum_is_computed_when_not_cached() -> None:
    data = stored(metadata(), b"payload")
    cached = entry.encode_message(1, 2, 3, data, entry_checksum=frame.checksum(data))
    assert entry.encode_message(1, 2, 3, data) == cached
    without = entry.encode_message(1, 2, 3, data, with_checksum=False)
    assert len(without) == len(cached) - 6
    [decoded] = frame.FrameDecoder().feed(without)
    assert decoded.checksum is None and bytes(decoded.entry or b"") == data


def test_send_entry_checksum_can_be_reused_for_message_frames() -> None:
    send = T(type=T.SEND, send=pb.CommandSend(producer_id=1, sequence_id=10))
    [received] = frame.FrameDecoder().feed(
        frame.encode_payload_command(send, metadata(), b"payload")
    )
    assert received.entry is not None and received.checksum is not None
    assert received.checksum == frame.checksum(received.entry)


# ---------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------


def test_unpack_batch_returns_each_message_with_its_metadata() -> None:
    messages = batch.unpack_batch(batch_payload(), 3)
    assert [m.batch_index for m in messages] == [0, 1, 2]
    assert [m.payload for m in messages] == [b"first", b"", b"third"]
    first, second, third = (m.metadata for m in messages)
    assert (first.partition_key, first.sequence_id) == ("k1", 10)
    assert [(p.key, p.value) for p in second.properties] == [("a", "b")]
    assert second.null_value
    assert (third.ordering_key, third.event_time) == (b"\x00\x01", 77)


@pytest.mark.parametrize(
    ("data", "count"),
    [
        (batch_payload(), 4),
        (batch_payload()[:-1], 3),
        (u32(200) + b"x", 1),
        (u32(2) + b"\xff\xff", 1),
        (u32(0), 1),
    ],
    ids=["fewer-than-announced", "last-payload-cut", "meta-past-end", "garbage-meta", "no-size"],
)
def test_broken_batches_raise_batch_format_error(data: bytes, count: int) -> None:
    with pytest.raises(errors.BatchFormatError):
        batch.unpack_batch(data, count)


def test_read_messages_of_a_non_batched_entry_yields_one_message() -> None:
    meta = metadata(
        partition_key="key", event_time=12, properties=[pb.KeyValue(key="x", value="y")]
    )
    parsed, [message] = batch.read_messages(stored(meta, b"body"))
    assert parsed.producer_name == "prod"
    assert message.batch_index == -1
    assert message.payload == b"body"
    assert message.metadata.payload_size == 4
    assert (message.metadata.partition_key, message.metadata.event_time) == ("key", 12)
    assert message.metadata.sequence_id == 10
    assert [(p.key, p.value) for p in message.metadata.properties] == [("x", "y")]


@pytest.mark.parametrize(
    ("kind", "compress"),
    [
        (pb.NONE, lambda b: b),
        (pb.ZLIB, zlib.compress),
        (pb.LZ4, lambda b: bytes(cramjam.lz4.compress_block(b, store_size=False))),
        (pb.ZSTD, lambda b: bytes(cramjam.zstd.compress(b))),
        (pb.SNAPPY, lambda b: bytes(cramjam.snappy.compress_raw(b))),
    ],
    ids=["none", "zlib", "lz4", "zstd", "snappy"],
)
def test_read_messages_decompresses_a_batch(kind: int, compress) -> None:  # type: ignore[no-untyped-def]
    raw = batch_payload()
    meta = metadata(num_messages_in_batch=3, compression=kind, uncompressed_size=len(raw))
    _, messages = batch.read_messages(stored(meta, compress(raw)))
    assert [m.payload for m in messages] == [b"first", b"", b"third"]


def test_wrong_uncompressed_size_is_a_decompression_error() -> None:
    raw = batch_payload()
    meta = metadata(num_messages_in_batch=3, compression=pb.ZLIB, uncompressed_size=len(raw) - 1)
    with pytest.raises(errors.DecompressionError):
        batch.read_messages(stored(meta, zlib.compress(raw)))


def test_corrupt_compressed_payload_is_a_decompression_error() -> None:
    meta = metadata(num_messages_in_batch=1, compression=pb.LZ4, uncompressed_size=100)
    with pytest.raises(errors.DecompressionError):
        batch.read_messages(stored(meta, b"\xff" * 10))


def test_encrypted_entries_are_not_unpacked() -> None:
    meta = metadata(encryption_keys=[pb.EncryptionKeys(key="k", value=b"v")])
    with pytest.raises(errors.EncryptedPayloadError):
        batch.read_messages(stored(meta, b"ciphertext"))


def test_without_cramjam_only_zlib_and_none_decompress(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compression, "_cramjam_module", None)
    assert compression.available() == {pb.NONE, pb.ZLIB}
    assert compression.decompress(pb.ZLIB, zlib.compress(b"abc"), 3) == b"abc"
    with pytest.raises(errors.CompressionUnavailableError, match="cramjam"):
        compression.decompress(pb.LZ4, b"\x00", 1)


def test_with_cramjam_every_protocol_codec_is_available() -> None:
    assert compression.available() == {pb.NONE, pb.ZLIB, pb.LZ4, pb.ZSTD, pb.SNAPPY}
