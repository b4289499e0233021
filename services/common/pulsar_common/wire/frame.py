"""Framing of the Pulsar binary protocol: bytes on a TCP stream <-> BaseCommand.

Layouts (all sizes 4-byte big-endian unsigned; totalSize counts what follows it):

    simple:   totalSize | commandSize | BaseCommand
    payload:  totalSize | commandSize | BaseCommand
              [ 0x0e02 | size | BrokerEntryMetadata ]        (MESSAGE, opt-in)
              [ 0x0e01 | CRC32C ]                            (protocol >= 6)
              metadataSize | MessageMetadata | payload       <- the "entry"

The CRC32C (Castagnoli) covers the entry: metadataSize, metadata and payload.
The entry bytes are what a broker stores unchanged; this module hands them
out exactly as received and never re-encodes them.

Pure code: a connection adapter feeds received bytes into ``FrameDecoder``
and writes what the ``encode_*`` functions return.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c as _crc32c
from google.protobuf import message as _message

from pulsar_common.wire import errors
from pulsar_common.wire import pulsar_api_pb2 as pb

# Limits. The client and broker default for one message is 5 MiB; a frame may
# exceed it by the command and header bytes around the message, hence the room.
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
FRAME_HEADER_ROOM = 10 * 1024
DEFAULT_MAX_FRAME_SIZE = DEFAULT_MAX_MESSAGE_SIZE + FRAME_HEADER_ROOM

MAGIC_CHECKSUM = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02

# Anything the codec reads bytes from (collections.abc.Buffer needs Python 3.12).
Buffer = bytes | bytearray | memoryview

_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_SIZES = struct.Struct(">II")  # totalSize, commandSize
_CHECKSUM_SECTION = struct.Struct(">HI")  # magic, crc32c
_BEM_SECTION_HEAD = struct.Struct(">HI")  # magic, size


# Each BaseCommand body lives in the field whose number equals the type value.
_BODY_FIELD: dict[int, str] = {
    value.number: pb.BaseCommand.DESCRIPTOR.fields_by_number[value.number].name
    for value in pb.BaseCommand.Type.DESCRIPTOR.values
}
# Bodies without fields: tolerate senders that leave them out.
_EMPTY_BODY_TYPES = frozenset({pb.BaseCommand.PING, pb.BaseCommand.PONG})


def checksum(data: Buffer) -> int:
    """CRC32C (Castagnoli) of data, as the protocol carries it."""
    return int(_crc32c.crc32c(data))


@dataclass(frozen=True, slots=True)
class Frame:
    """One decoded frame.

    ``entry`` is set for payload commands (SEND, MESSAGE): the bytes from
    metadataSize to the end of the payload, exactly as received (read-only).
    ``checksum`` is the CRC32C the sender put in front of them, None when it
    sent none; ``checksum_valid`` is False only when one was sent and does not
    match. ``broker_entry_metadata`` holds the raw BrokerEntryMetadata bytes
    when the frame had that section.

    From `FrameDecoder` the views may point into the received chunk (no copy
    on the hot path); from `BufferedFrameDecoder` they are views of bytes of
    their own. Take ``entry_bytes(frame.entry)`` to keep an entry beyond
    handling the frame: no copy in the second case, and in the first a copy,
    so a small entry does not pin a whole received chunk in memory.
    """

    command: pb.BaseCommand
    entry: memoryview | None = None
    checksum: int | None = None
    checksum_valid: bool = True
    broker_entry_metadata: memoryview | None = None


# ---------------------------------------------------------------------------
# Encoding
# ---------------------------------------------------------------------------


def encode_command(command: pb.BaseCommand) -> bytes:
    """A simple frame: totalSize | commandSize | BaseCommand."""
    body: bytes = command.SerializeToString()
    size = len(body)
    return _SIZES.pack(size + 4, size) + body


def encode_entry(metadata: pb.MessageMetadata | bytes, payload: Buffer) -> bytes:
    """metadataSize | metadata | payload: the entry a producer sends and a broker stores."""
    meta = metadata if isinstance(metadata, bytes) else metadata.SerializeToString()
    return b"".join((_U32.pack(len(meta)), meta, payload))


def payload_frame_parts(
    command: pb.BaseCommand,
    entry: Buffer,
    *,
    with_checksum: bool = True,
    entry_checksum: int | None = None,
    broker_entry_metadata: pb.BrokerEntryMetadata | bytes | None = None,
) -> tuple[bytes, Buffer]:
    """A payload frame as (header, entry), ready for ``transport.writelines``.

    The entry is not copied. Pass ``entry_checksum`` when it is already known
    (a broker computes it once per stored entry and reuses it for every
    consumer); otherwise it is computed here when ``with_checksum``.
    """
    body = command.SerializeToString()
    entry_size = memoryview(entry).nbytes
    parts = [b"", body]
    total = 4 + len(body) + entry_size
    if broker_entry_metadata is not None:
        bem = (
            broker_entry_metadata
            if isinstance(broker_entry_metadata, bytes)
            else broker_entry_metadata.SerializeToString()
        )
        parts.append(_BEM_SECTION_HEAD.pack(MAGIC_BROKER_ENTRY_METADATA, len(bem)))
        parts.append(bem)
        total += 6 + len(bem)
    if with_checksum:
        crc = checksum(entry) if entry_checksum is None else entry_checksum
        parts.append(_CHECKSUM_SECTION.pack(MAGIC_CHECKSUM, crc))
        total += 6
    parts[0] = _SIZES.pack(total, len(body))
    return b"".join(parts), entry


def encode_payload_command(
    command: pb.BaseCommand,
    metadata: pb.MessageMetadata | bytes,
    payload: Buffer,
    *,
    with_checksum: bool = True,
    broker_entry_metadata: pb.BrokerEntryMetadata | bytes | None = None,
) -> bytes:
    """A whole payload frame (SEND or MESSAGE) as one bytes object."""
    header, entry = payload_frame_parts(
        command,
        encode_entry(metadata, payload),
        with_checksum=with_checksum,
        broker_entry_metadata=broker_entry_metadata,
    )
    return header + bytes(entry)


# ---------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------


def parse_command(data: Buffer) -> pb.BaseCommand:
    """Parse BaseCommand bytes, checking the type is known and its body present."""
    command = pb.BaseCommand()
    try:
        command.ParseFromString(data)
    except _message.DecodeError as exc:
        raise errors.CommandParseError(f"unparsable BaseCommand: {exc}") from exc
    if not command.HasField("type"):
        # A closed proto2 enum drops values it does not know into the unknown
        # fields, so an unknown type shows up as a missing one.
        command_type = _peek_command_type(memoryview(data))
        if command_type is not None:
            raise errors.UnknownCommandError(command_type)
        raise errors.CommandParseError("BaseCommand without a type")
    if not command.IsInitialized():
        missing = ", ".join(command.FindInitializationErrors())
        raise errors.CommandParseError(f"BaseCommand misses required fields: {missing}")
    field = _BODY_FIELD[command.type]
    if command.type not in _EMPTY_BODY_TYPES and not command.HasField(field):
        name = pb.BaseCommand.Type.Name(command.type)
        raise errors.MissingCommandBodyError(f"{name} command without its '{field}' body")
    return command


def _peek_command_type(data: memoryview) -> int | None:
    """The varint of field 1 when the message starts with it (as encoders write it)."""
    if len(data) < 2 or data[0] != 0x08:
        return None
    value, shift = 0, 0
    for byte in data[1:11]:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    return None


def decode_frame(body: Buffer, *, own: bool = False) -> Frame:
    """Decode one frame given the bytes after its totalSize field. `own`: the frame's entry
    and broker entry metadata are copies (`body` is about to be overwritten), each a view
    of a whole bytes object of its own (`entry_bytes` hands that object out)."""
    view = body if isinstance(body, memoryview) else memoryview(body)
    if len(view) < 4:
        raise errors.MalformedFrameError(f"frame of {len(view)} bytes has no command size")
    command_size = _U32.unpack_from(view, 0)[0]
    command_end = 4 + command_size
    if command_end > len(view):
        raise errors.MalformedFrameError(
            f"command size {command_size} exceeds the frame's {len(view) - 4} bytes"
        )
    command = parse_command(view[4:command_end])
    if command_end == len(view):
        return Frame(command)
    return _decode_payload_sections(command, view[command_end:], own)


def entry_bytes(entry: memoryview) -> bytes:
    """The entry as bytes to keep: the bytes object a decoder copied it into, when it spans
    one (no copy), else a copy (so a small entry does not pin a whole received chunk)."""
    owner = entry.obj
    if type(owner) is bytes and len(owner) == entry.nbytes:
        return owner
    return bytes(entry)


def _decode_payload_sections(command: pb.BaseCommand, rest: memoryview, own: bool) -> Frame:
    size = len(rest)
    pos = 0
    bem: memoryview | None = None
    magic = _U16.unpack_from(rest, 0)[0] if size >= 2 else 0
    if magic == MAGIC_BROKER_ENTRY_METADATA:
        if size < 6:
            raise errors.MalformedFrameError("broker entry metadata section cut short")
        bem_size = _U32.unpack_from(rest, 2)[0]
        pos = 6 + bem_size
        if pos > size:
            raise errors.MalformedFrameError(f"broker entry metadata size {bem_size} too large")
        bem = rest[6:pos]
        magic = _U16.unpack_from(rest, pos)[0] if size - pos >= 2 else 0
    crc: int | None = None
    if magic == MAGIC_CHECKSUM:
        if size - pos < 6:
            raise errors.MalformedFrameError("checksum section cut short")
        crc = _U32.unpack_from(rest, pos + 2)[0]
        pos += 6
    entry = rest[pos:] if pos else rest
    if len(entry) < 4:
        raise errors.MalformedFrameError("payload section has no metadata size")
    metadata_size = _U32.unpack_from(entry, 0)[0]
    if 4 + metadata_size > len(entry):
        raise errors.MalformedFrameError(
            f"metadata size {metadata_size} exceeds the {len(entry) - 4} bytes that follow"
        )
    valid = crc is None or _crc32c.crc32c(entry) == crc
    if own:  # views of bytes: read-only already
        return Frame(command, memoryview(bytes(entry)), crc, valid,
                     None if bem is None else memoryview(bytes(bem)))
    return Frame(command, entry.toreadonly(), crc, valid, None if bem is None else bem.toreadonly())


class FrameDecoder:
    """Turns a byte stream into frames, whatever the chunking of the stream.

    ``feed`` returns the frames completed by the new bytes. Oversized and
    malformed frames raise a ``WireError``; after that the stream cannot be
    resynchronised and the decoder refuses further input: close the
    connection. Bytes of an incomplete frame are buffered; the buffer never
    exceeds one frame of ``max_frame_size`` plus one received chunk.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 8:
            raise ValueError(f"max_frame_size must be at least 8, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._failed: errors.WireError | None = None

    @property
    def buffered_bytes(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buffer)

    def feed(self, data: Buffer) -> list[Frame]:
        if self._failed is not None:
            raise errors.MalformedFrameError("stream already failed") from self._failed
        try:
            return self._feed(data)
        except errors.WireError as exc:
            self._failed = exc
            # Replace rather than clear: the traceback may still hold a view of it.
            self._buffer = bytearray()
            raise

    def _feed(self, data: Buffer) -> list[Frame]:
        if isinstance(data, bytes):
            frames: list[Frame] = []
            view = memoryview(data)
            if self._buffer:
                # Complete the buffered frame with only the bytes it lacks, then go on
                # straight out of the chunk: large frames (which rarely line up with the
                # socket's chunks) are copied once, not appended whole, copied out and
                # shifted down.
                view = self._complete_buffered(view, frames)
                if self._buffer:
                    return frames
            # Decode straight out of the received (immutable) chunk.
            more, used = self._split(view, copy=False)
            frames += more
            if used < len(view):
                self._buffer += view[used:]
            return frames
        self._buffer += data
        with memoryview(self._buffer) as view:
            frames, used = self._split(view, copy=True)
        del self._buffer[:used]
        return frames

    def _complete_buffered(self, view: memoryview, frames: list[Frame]) -> memoryview:
        """Move bytes of `view` into the buffer until it holds a whole frame (decoded into
        `frames`, the buffer then empty) or `view` runs out; returns what is left of it."""
        buffer = self._buffer
        if len(buffer) < 4:
            take = min(4 - len(buffer), len(view))
            buffer += view[:take]
            view = view[take:]
            if len(buffer) < 4:
                return view
        total = _U32.unpack_from(buffer, 0)[0]
        if total > self.max_frame_size:
            raise errors.FrameTooLargeError(total, self.max_frame_size)
        need = 4 + total - len(buffer)
        if len(view) < need:
            buffer += view
            return view[len(view):]
        buffer += view[:need]
        # The buffer becomes the frame's (nothing writes to it again): no copy out of it.
        self._buffer = bytearray()
        frames.append(decode_frame(memoryview(buffer)[4:]))
        return view[need:]

    def _split(self, data: Buffer, *, copy: bool) -> tuple[list[Frame], int]:
        view = memoryview(data)
        size = len(view)
        frames: list[Frame] = []
        pos = 0
        while size - pos >= 4:
            total = _U32.unpack_from(view, pos)[0]
            if total > self.max_frame_size:
                raise errors.FrameTooLargeError(total, self.max_frame_size)
            end = pos + 4 + total
            if end > size:
                break
            body = bytes(view[pos + 4 : end]) if copy else view[pos + 4 : end]
            frames.append(decode_frame(body))
            pos = end
        return frames, pos


#: A buffered connection's receive buffer starts this small (an idle or quiet connection
#: holds no more) and grows to RECEIVE_BUFFER_MAX_BYTES once reads fill it or a frame needs
#: more; frames up to that size are read into it in place, a larger one into its own.
RECEIVE_BUFFER_INITIAL_BYTES = 16 * 1024
RECEIVE_BUFFER_MAX_BYTES = 256 * 1024


class BufferedFrameDecoder:
    """Frames out of a stream read straight into the decoder's own buffer, for an
    `asyncio.BufferedProtocol`: the transport reads into `get_buffer()`, then
    `buffer_updated(n)` returns the frames completed by those n bytes.

    The buffer is reused for the next reads, so every frame owns its bytes: the
    entry is copied out once (`decode_frame(own=True)`), and nothing else is
    copied between the socket and it (a plain protocol's chunk is itself a copy
    of what the socket read). When less than a quarter of the buffer is left at
    its end, the bytes of the incomplete frame are moved to its start. The
    failure rules are `FrameDecoder`'s.
    """

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 8:
            raise ValueError(f"max_frame_size must be at least 8, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self._buffer: memoryview | None = None
        #: The bytes not yet decoded are _buffer[_start:_end].
        self._start = 0
        self._end = 0
        #: The room the last get_buffer offered, and whether the buffer is to grow.
        self._offered = 0
        self._grow = False
        #: A frame larger than RECEIVE_BUFFER_MAX_BYTES, being read into a buffer of its own.
        self._large: memoryview | None = None
        self._large_filled = 0
        self._failed: errors.WireError | None = None

    @property
    def buffered_bytes(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return self._large_filled if self._large is not None else self._end - self._start

    @property
    def buffer_size(self) -> int:
        """Bytes of the receive buffer (0 before the first read)."""
        return 0 if self._buffer is None else len(self._buffer)

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Where the next read goes (`sizehint` is ignored: the room is the buffer's)."""
        if self._large is not None:
            return self._large[self._large_filled:]
        buffer = self._buffer
        if buffer is None:
            buffer = self._buffer = memoryview(bytearray(RECEIVE_BUFFER_INITIAL_BYTES))
        if self._grow or len(buffer) - self._end < len(buffer) // 4:
            pending = self._end - self._start
            if self._grow:
                self._grow = False
                grown = memoryview(bytearray(RECEIVE_BUFFER_MAX_BYTES))
                grown[:pending] = buffer[self._start : self._end]
                buffer = self._buffer = grown
            else:
                buffer[:pending] = buffer[self._start : self._end]
            self._start, self._end = 0, pending
        room = buffer[self._end:]
        self._offered = len(room)
        return room

    def buffer_updated(self, nbytes: int) -> list[Frame]:
        if self._failed is not None:
            raise errors.MalformedFrameError("stream already failed") from self._failed
        try:
            return self._updated(nbytes)
        except errors.WireError as exc:
            self._failed = exc
            self._start = self._end = 0
            self._large = None
            raise

    def _updated(self, nbytes: int) -> list[Frame]:
        if self._large is not None:
            self._large_filled += nbytes
            if self._large_filled < len(self._large):
                return []
            whole, self._large, self._large_filled = self._large, None, 0
            return [decode_frame(whole[4:], own=True)]
        view = self._buffer
        assert view is not None
        if nbytes == self._offered and len(view) < RECEIVE_BUFFER_MAX_BYTES:
            self._grow = True  # reads fill it: more is coming than it holds
        self._end += nbytes
        position, end = self._start, self._end
        frames: list[Frame] = []
        while end - position >= 4:
            total = _U32.unpack_from(view, position)[0]
            if total > self.max_frame_size:
                raise errors.FrameTooLargeError(total, self.max_frame_size)
            frame_end = position + 4 + total
            if frame_end > end:
                if 4 + total > RECEIVE_BUFFER_MAX_BYTES:
                    # It cannot fit even at the start of a full-sized buffer: its own.
                    large = memoryview(bytearray(4 + total))
                    large[: end - position] = view[position:end]
                    self._large, self._large_filled = large, end - position
                    position = end
                elif 4 + total > len(view):
                    self._grow = True
                break
            frames.append(decode_frame(view[position + 4 : frame_end], own=True))
            position = frame_end
        if position == end:
            self._start = self._end = 0
        else:
            self._start = position
        return frames
