"""Frame layout, incremental decoding and the errors a bad peer gets."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_common import errors as common_errors
from pulsar_common.wire import errors, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def reference_crc32c(data: bytes) -> int:
    """Bit-by-bit CRC32C (Castagnoli, reflected 0x82F63B78): independent of the library."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def u32(value: int) -> bytes:
    return struct.pack(">I", value)


def send_command(producer_id: int = 1, sequence_id: int = 2) -> pb.BaseCommand:
    return T(type=T.SEND, send=pb.CommandSend(producer_id=producer_id, sequence_id=sequence_id))


def small_metadata() -> pb.MessageMetadata:
    return pb.MessageMetadata(producer_name="p", sequence_id=2, publish_time=1000)


# ---------------------------------------------------------------------------
# Golden bytes
# ---------------------------------------------------------------------------


def test_checksum_is_crc32c_castagnoli() -> None:
    assert frame.checksum(b"123456789") == 0xE3069283 == reference_crc32c(b"123456789")


def test_ping_frame_is_sizes_then_type_then_empty_body() -> None:
    command_bytes = bytes.fromhex(
        "0812"  # field 1 (type), varint 18 = PING
        "920100"  # field 18 (ping), length 0
    )
    expected = u32(4 + 5) + u32(5) + command_bytes
    assert frame.encode_command(T(type=T.PING, ping=pb.CommandPing())) == expected
    assert expected.hex() == "00000009000000050812920100"


def test_send_frame_golden_bytes_field_by_field() -> None:
    command_bytes = bytes.fromhex(
        "0806"  # type = SEND (6)
        "3204"  # field 6 (send), length 4
        "0801"  # producer_id = 1
        "1002"  # sequence_id = 2
    )
    metadata_bytes = bytes.fromhex(
        "0a0170"  # producer_name = "p"
        "1002"  # sequence_id = 2
        "18e807"  # publish_time = 1000
    )
    entry = u32(len(metadata_bytes)) + metadata_bytes + b"hi"
    crc = reference_crc32c(entry)
    assert crc == 0xCD7E5234
    expected = (
        u32(4 + len(command_bytes) + 2 + 4 + len(entry))  # totalSize = 32
        + u32(len(command_bytes))  # commandSize = 8
        + command_bytes
        + b"\x0e\x01"  # checksum magic
        + u32(crc)
        + entry  # metadataSize | metadata | payload
    )
    assert expected.hex() == (
        "000000200000000808063204080110020e01cd7e5234000000080a0170100218e8076869"
    )
    assert frame.encode_payload_command(send_command(), small_metadata(), b"hi") == expected
    # Metadata given as bytes is used verbatim.
    assert frame.encode_payload_command(send_command(), metadata_bytes, b"hi") == expected


def test_message_frame_puts_broker_entry_metadata_before_the_checksum() -> None:
    command = T(
        type=T.MESSAGE,
        message=pb.CommandMessage(
            consumer_id=3, message_id=pb.MessageIdData(ledgerId=7, entryId=0)
        ),
    )
    command_bytes = bytes.fromhex(
        "0809"  # type = MESSAGE (9)
        "4a08"  # field 9 (message), length 8
        "0803"  # consumer_id = 3
        "1204"
        "0807"
        "1000"  # message_id {ledgerId 7, entryId 0}
    )
    bem_bytes = bytes.fromhex("08051006")  # broker_timestamp 5, index 6
    entry = u32(8) + bytes.fromhex("0a0170100218e807") + b"hi"
    expected = (
        u32(4 + 12 + 2 + 4 + 4 + 2 + 4 + len(entry))
        + u32(12)
        + command_bytes
        + b"\x0e\x02"
        + u32(4)
        + bem_bytes
        + b"\x0e\x01"
        + u32(reference_crc32c(entry))
        + entry
    )
    bem = pb.BrokerEntryMetadata(broker_timestamp=5, index=6)
    header, data = frame.payload_frame_parts(command, entry, broker_entry_metadata=bem)
    assert header + bytes(data) == expected
    assert data is entry  # the entry is not copied


def test_payload_frame_without_checksum_for_clients_before_v6() -> None:
    encoded = frame.encode_payload_command(
        send_command(), small_metadata(), b"hi", with_checksum=False
    )
    entry = u32(8) + bytes.fromhex("0a0170100218e807") + b"hi"
    assert encoded == u32(4 + 8 + len(entry)) + u32(8) + bytes.fromhex("0806320408011002") + entry
    [decoded] = frame.FrameDecoder().feed(encoded)
    assert decoded.checksum is None and decoded.checksum_valid
    assert bytes(decoded.entry or b"") == entry


def test_known_checksum_is_used_instead_of_recomputed() -> None:
    entry = frame.encode_entry(small_metadata(), b"hi")
    header, _ = frame.payload_frame_parts(send_command(), entry, entry_checksum=0x01020304)
    assert header.endswith(b"\x0e\x01\x01\x02\x03\x04")


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------


def sample_stream() -> bytes:
    ping = frame.encode_command(T(type=T.PING, ping=pb.CommandPing()))
    send = frame.encode_payload_command(send_command(), small_metadata(), b"payload bytes")
    bem = pb.BrokerEntryMetadata(broker_timestamp=99, index=3)
    message = T(
        type=T.MESSAGE,
        message=pb.CommandMessage(
            consumer_id=1, message_id=pb.MessageIdData(ledgerId=1, entryId=2)
        ),
    )
    message_frame = frame.encode_payload_command(
        message, small_metadata(), b"", broker_entry_metadata=bem
    )
    return ping + send + message_frame


def summary(frames: list[frame.Frame]) -> list[tuple[object, ...]]:
    return [
        (
            f.command.SerializeToString(),
            None if f.entry is None else bytes(f.entry),
            f.checksum,
            f.checksum_valid,
            None if f.broker_entry_metadata is None else bytes(f.broker_entry_metadata),
        )
        for f in frames
    ]


def test_decoder_round_trips_simple_and_payload_frames() -> None:
    ping, send, message = frame.FrameDecoder().feed(sample_stream())
    assert ping.command.type == T.PING and ping.entry is None
    assert send.command.send.sequence_id == 2
    assert bytes(send.entry or b"") == frame.encode_entry(small_metadata(), b"payload bytes")
    assert send.checksum == frame.checksum(send.entry or b"") and send.checksum_valid
    assert message.command.message.message_id.entryId == 2
    bem = pb.BrokerEntryMetadata.FromString(bytes(message.broker_entry_metadata or b""))
    assert (bem.broker_timestamp, bem.index) == (99, 3)
    assert message.checksum_valid


def test_decoder_gives_the_same_frames_whatever_the_split_point() -> None:
    stream = sample_stream()
    expected = summary(frame.FrameDecoder().feed(stream))
    for cut in range(len(stream) + 1):
        decoder = frame.FrameDecoder()
        frames = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert summary(frames) == expected, f"split at {cut}"
        assert decoder.buffered_bytes == 0


def test_decoder_fed_one_byte_at_a_time() -> None:
    stream = sample_stream()
    decoder = frame.FrameDecoder()
    frames: list[frame.Frame] = []
    for i in range(len(stream)):
        frames += decoder.feed(stream[i : i + 1])
    assert summary(frames) == summary(frame.FrameDecoder().feed(stream))


def test_decoder_accepts_bytearray_and_memoryview_chunks() -> None:
    stream = sample_stream()
    chunk = bytearray(stream[:20])
    decoder = frame.FrameDecoder()
    frames = decoder.feed(chunk) + decoder.feed(memoryview(stream)[20:])
    chunk[:] = b"\xff" * 20  # the caller reuses its buffer: decoded frames must not change
    assert summary(frames) == summary(frame.FrameDecoder().feed(stream))


@settings(max_examples=60, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=5),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=6),
)
def test_random_frames_survive_random_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(
        frame.encode_payload_command(send_command(sequence_id=i), small_metadata(), p)
        for i, p in enumerate(payloads)
    )
    bounds = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    decoder = frame.FrameDecoder()
    frames: list[frame.Frame] = []
    for start, end in itertools.pairwise(bounds):
        frames += decoder.feed(stream[start:end])
    assert [f.command.send.sequence_id for f in frames] == list(range(len(payloads)))
    assert [bytes(f.entry or b"")[12:] for f in frames] == payloads
    assert all(f.checksum_valid for f in frames)


def test_checksum_mismatch_is_reported_on_the_frame_not_raised() -> None:
    encoded = bytearray(frame.encode_payload_command(send_command(), small_metadata(), b"hi"))
    encoded[-1] ^= 0x01  # one flipped payload bit
    [decoded] = frame.FrameDecoder().feed(bytes(encoded))
    assert decoded.command.type == T.SEND
    assert decoded.checksum is not None
    assert not decoded.checksum_valid
    assert bytes(decoded.entry or b"").endswith(b"hh")  # "i" ^ 1


# ---------------------------------------------------------------------------
# Limits and malformed input
# ---------------------------------------------------------------------------


def test_default_frame_limit_is_five_mebibytes_plus_header_room() -> None:
    assert frame.DEFAULT_MAX_MESSAGE_SIZE == 5 * 1024 * 1024
    assert frame.FrameDecoder().max_frame_size == 5 * 1024 * 1024 + 10 * 1024


def test_oversized_frame_is_rejected_as_soon_as_its_size_arrives() -> None:
    decoder = frame.FrameDecoder(max_frame_size=1000)
    with pytest.raises(errors.FrameTooLargeError) as raised:
        decoder.feed(u32(1001))
    assert (raised.value.frame_size, raised.value.max_frame_size) == (1001, 1000)
    assert isinstance(raised.value, common_errors.PulsarError)


def test_frame_exactly_at_the_limit_is_accepted() -> None:
    encoded = frame.encode_payload_command(send_command(), small_metadata(), b"x" * 100)
    decoder = frame.FrameDecoder(max_frame_size=len(encoded) - 4)
    assert len(decoder.feed(encoded)) == 1
    with pytest.raises(errors.FrameTooLargeError):
        frame.FrameDecoder(max_frame_size=len(encoded) - 5).feed(encoded)


def test_decoder_refuses_more_input_after_an_error() -> None:
    decoder = frame.FrameDecoder(max_frame_size=100)
    with pytest.raises(errors.FrameTooLargeError):
        decoder.feed(u32(500) + b"\x00" * 10)
    with pytest.raises(errors.MalformedFrameError):
        decoder.feed(frame.encode_command(T(type=T.PING, ping=pb.CommandPing())))


def framed(body: bytes) -> bytes:
    return u32(len(body)) + body


PING_BYTES = T(type=T.PING, ping=pb.CommandPing()).SerializeToString()
SEND_BYTES = send_command().SerializeToString()


@pytest.mark.parametrize(
    ("body", "error"),
    [
        pytest.param(b"\x00\x00", errors.MalformedFrameError, id="no-room-for-command-size"),
        pytest.param(u32(50) + PING_BYTES, errors.MalformedFrameError, id="command-size-too-big"),
        pytest.param(u32(2) + b"\xff\xff", errors.CommandParseError, id="unparsable-command"),
        pytest.param(u32(2) + b"\x08\x63", errors.UnknownCommandError, id="unknown-type-99"),
        pytest.param(u32(2) + b"\x12\x00", errors.CommandParseError, id="no-type"),
        pytest.param(u32(2) + b"\x08\x06", errors.MissingCommandBodyError, id="send-without-body"),
        pytest.param(
            u32(6) + b"\x08\x06\x32\x02\x08\x01",
            errors.CommandParseError,
            id="send-missing-sequence-id",
        ),
        pytest.param(
            u32(len(SEND_BYTES)) + SEND_BYTES + b"\x00\x00",
            errors.MalformedFrameError,
            id="payload-without-metadata-size",
        ),
        pytest.param(
            u32(len(SEND_BYTES)) + SEND_BYTES + u32(10) + b"abc",
            errors.MalformedFrameError,
            id="metadata-size-past-end",
        ),
        pytest.param(
            u32(len(SEND_BYTES)) + SEND_BYTES + b"\x0e\x01\x00\x00",
            errors.MalformedFrameError,
            id="checksum-cut-short",
        ),
        pytest.param(
            u32(len(SEND_BYTES)) + SEND_BYTES + b"\x0e\x02" + u32(100) + b"\x08\x01",
            errors.MalformedFrameError,
            id="broker-entry-metadata-size-past-end",
        ),
    ],
)
def test_malformed_frames_raise_the_specific_error(body: bytes, error: type[Exception]) -> None:
    with pytest.raises(error) as raised:
        frame.FrameDecoder().feed(framed(body))
    assert isinstance(raised.value, errors.WireError)


def test_unknown_command_error_names_the_type() -> None:
    with pytest.raises(errors.UnknownCommandError) as raised:
        frame.parse_command(b"\x08\x63")
    assert raised.value.command_type == 99


def test_ping_without_its_empty_body_is_tolerated() -> None:
    [decoded] = frame.FrameDecoder().feed(framed(u32(2) + b"\x08\x12"))
    assert decoded.command.type == T.PING


def test_decoder_limit_must_leave_room_for_the_sizes() -> None:
    with pytest.raises(ValueError, match="at least 8"):
        frame.FrameDecoder(max_frame_size=4)


def test_malformed_frame_completed_across_chunks_raises_the_same_error() -> None:
    bad = framed(u32(2) + b"\x08\x63")  # unknown command type, delivered in pieces
    decoder = frame.FrameDecoder()
    assert decoder.feed(bad[:3]) == []
    assert decoder.buffered_bytes == 3
    with pytest.raises(errors.UnknownCommandError):
        decoder.feed(bytearray(bad[3:]))
    assert decoder.buffered_bytes == 0
