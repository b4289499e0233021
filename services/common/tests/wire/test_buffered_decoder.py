"""The decoder a buffered connection reads into (`frame.BufferedFrameDecoder`)."""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_common.wire import errors, frame

from .test_frame import T, sample_stream, send_command, small_metadata, summary, u32


def read_in(decoder: frame.BufferedFrameDecoder, data: bytes, most: int | list[int] = 1 << 30
            ) -> list[frame.Frame]:
    """What a transport does: read into get_buffer(), at most `most` bytes a time (a list:
    those read sizes in turn, over and over)."""
    frames: list[frame.Frame] = []
    taken = 0
    sizes = itertools.cycle([most] if isinstance(most, int) else most)
    while taken < len(data):
        most = next(sizes)
        room = decoder.get_buffer(-1)
        step = min(len(room), most, len(data) - taken)
        room[:step] = data[taken : taken + step]
        taken += step
        frames += decoder.buffer_updated(step)
    return frames


def send_stream(payloads: list[bytes]) -> bytes:
    return b"".join(
        frame.encode_payload_command(send_command(sequence_id=i), small_metadata(), p)
        for i, p in enumerate(payloads)
    )


def test_same_frames_as_the_chunk_decoder_whatever_the_read_size() -> None:
    stream = sample_stream() * 3
    expected = summary(frame.FrameDecoder().feed(stream))
    for most in (1, 2, 3, 7, 50, len(stream)):
        decoder = frame.BufferedFrameDecoder()
        assert summary(read_in(decoder, stream, most)) == expected, most
        assert decoder.buffered_bytes == 0


def test_frames_keep_their_bytes_when_the_buffer_is_read_into_again() -> None:
    payloads = [os.urandom(3000) for _ in range(40)]  # 120 KB through a 16 KiB buffer first
    decoder = frame.BufferedFrameDecoder()
    frames = read_in(decoder, send_stream(payloads), most=5000)
    assert [bytes(f.entry or b"")[12:] for f in frames] == payloads
    assert all(f.checksum_valid for f in frames)


def test_an_entry_is_handed_out_without_another_copy() -> None:
    [received] = read_in(frame.BufferedFrameDecoder(), send_stream([b"payload"]))
    assert received.entry is not None
    kept = frame.entry_bytes(received.entry)
    assert kept is received.entry.obj and kept.endswith(b"payload")
    # A view into a larger chunk (the chunk decoder's) is copied.
    chunked, *_ = frame.FrameDecoder().feed(send_stream([b"payload"]) + sample_stream())
    assert chunked.entry is not None
    assert frame.entry_bytes(chunked.entry) is not chunked.entry.obj
    assert frame.entry_bytes(chunked.entry) == kept


def test_the_buffer_starts_small_and_grows_for_traffic_or_a_large_frame() -> None:
    quiet = frame.BufferedFrameDecoder()
    read_in(quiet, sample_stream())
    assert quiet.buffer_size == frame.RECEIVE_BUFFER_INITIAL_BYTES
    big = os.urandom(100_000)
    busy = frame.BufferedFrameDecoder()
    [received] = read_in(busy, send_stream([big]), most=4096)
    assert busy.buffer_size == frame.RECEIVE_BUFFER_MAX_BYTES
    assert bytes(received.entry or b"")[12:] == big


def test_a_frame_larger_than_the_buffer_is_read_into_its_own() -> None:
    huge = os.urandom(frame.RECEIVE_BUFFER_MAX_BYTES + 12_345)
    payloads = [b"before", huge, b"after"]
    for most in (1000, 70_000, 1 << 30):
        decoder = frame.BufferedFrameDecoder()
        frames = read_in(decoder, send_stream(payloads), most)
        assert [bytes(f.entry or b"")[12:] for f in frames] == payloads, most
        assert decoder.buffer_size <= frame.RECEIVE_BUFFER_MAX_BYTES
        assert decoder.buffered_bytes == 0


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=300_000), min_size=1, max_size=6),
    reads=st.lists(st.integers(min_value=1, max_value=100_000), min_size=1, max_size=8),
)
def test_random_frames_survive_random_read_sizes(sizes: list[int], reads: list[int]) -> None:
    payloads = [bytes([n % 251]) * size for n, size in enumerate(sizes)]
    frames = read_in(frame.BufferedFrameDecoder(), send_stream(payloads), reads)
    assert [f.command.send.sequence_id for f in frames] == list(range(len(payloads)))
    assert [bytes(f.entry or b"")[12:] for f in frames] == payloads


def test_an_oversized_frame_fails_the_stream_for_good() -> None:
    decoder = frame.BufferedFrameDecoder(max_frame_size=1000)
    with pytest.raises(errors.FrameTooLargeError):
        read_in(decoder, u32(1001))
    with pytest.raises(errors.MalformedFrameError):
        read_in(decoder, sample_stream())


def test_a_malformed_frame_raises_as_the_chunk_decoder_does() -> None:
    body = u32(3) + b"\xff\xff\xff"  # a command of garbage
    with pytest.raises(errors.WireError) as chunked:
        frame.FrameDecoder().feed(u32(len(body)) + body)
    with pytest.raises(type(chunked.value)):
        read_in(frame.BufferedFrameDecoder(), u32(len(body)) + body, most=3)


def test_commands_without_payload_decode_too() -> None:
    ping = frame.encode_command(T(type=T.PING, ping={}))
    [received] = read_in(frame.BufferedFrameDecoder(), ping)
    assert received.command.type == T.PING and received.entry is None
