"""The bookie protocol's frames: fixed struct-packed headers, length-prefixed, no asyncio.

Every frame, request or response, starts with the same 42-byte header:

    size        u32  bytes after this field (header rest + master key + body)
    magic       u16  0xB0C1, so a stray client or a desynchronised stream is caught
    op          u8   Op
    flags/status u8  request: Flag bits; response: Status
    key_length  u16  request: length of the master key that follows the header; response: 0
    request_id  u64  chosen by the client, echoed by the response
    ledger_id   i64
    entry_id    i64  ADD/READ: the entry; WAIT_LAC: the LAC the reader already knows
    arg         i64  ADD: the writer's LAC; WAIT_LAC: timeout in ms; response: the LAC

then the master key (requests), then the body: the entry payload (ADD requests, READ
responses) or a UTF-8 error message (responses with a status other than OK).

Integers are big-endian. One fixed layout for every operation keeps decoding to
a single struct.unpack_from per frame, and the payload is sliced out of the
receive buffer exactly once.
"""

from __future__ import annotations

import enum
import struct
import typing

from pulsar_bookie import errors
from pulsar_bookie.net import errors as net_errors

MAGIC = 0xB0C1
HEADER = struct.Struct(">IHBBHQqqq")
HEADER_SIZE = HEADER.size
_SIZE = struct.Struct(">I")
#: Default largest frame (BookKeeper's nettyMaxFrameSizeBytes: 5 MB of entry plus headers).
MAX_FRAME_BYTES_DEFAULT = 5 * 1024 * 1024 + 16 * 1024
#: Master keys are digests (20 bytes in BookKeeper); anything longer is a broken client.
MASTER_KEY_MAX_BYTES = 1024


class Op(enum.IntEnum):
    ADD = 1
    READ = 2
    READ_LAC = 3
    WAIT_LAC = 4
    FENCE = 5


class Flag(enum.IntFlag):
    NONE = 0
    #: ADD: a recovering client re-replicates an entry; allowed on a fenced ledger.
    RECOVERY = 1
    #: READ: fence the ledger before reading (recovery reads).
    FENCE = 2


KNOWN_FLAGS = int(Flag.RECOVERY | Flag.FENCE)
#: Plain ints for the hot path (IntFlag arithmetic is slow).
FLAG_RECOVERY = int(Flag.RECOVERY)
FLAG_FENCE = int(Flag.FENCE)


class Status(enum.IntEnum):
    OK = 0
    NO_SUCH_LEDGER = 1
    NO_SUCH_ENTRY = 2
    FENCED = 3
    UNAUTHORIZED = 4
    TOO_MANY_REQUESTS = 5
    READ_ONLY = 6
    UNAVAILABLE = 7
    BAD_REQUEST = 8
    SERVER_ERROR = 9
    LEDGER_CLOSED = 10


#: Response status -> the exception the client raises. Order matters for error_status:
#: subclasses (read-only) come before their bases (unavailable).
_ERRORS: dict[Status, type[errors.BookieError]] = {
    Status.NO_SUCH_LEDGER: errors.NoSuchLedgerError,
    Status.NO_SUCH_ENTRY: errors.NoSuchEntryError,
    Status.FENCED: errors.LedgerFencedError,
    Status.UNAUTHORIZED: errors.UnauthorizedAccessError,
    Status.TOO_MANY_REQUESTS: errors.TooManyRequestsError,
    Status.READ_ONLY: net_errors.BookieReadOnlyError,
    Status.UNAVAILABLE: errors.BookieUnavailableError,
    Status.BAD_REQUEST: net_errors.BadRequestError,
    Status.LEDGER_CLOSED: errors.LedgerClosedError,
    Status.SERVER_ERROR: net_errors.BookieServerError,
}


_OPS = {int(op): op for op in Op}
_STATUSES = {int(status): status for status in Status}


def error_for(status: Status, message: str) -> errors.BookieError:
    """The exception a client raises for a failed response."""
    return _ERRORS.get(status, net_errors.BookieServerError)(message)


def status_for(exc: BaseException) -> Status:
    """The status a server answers with when storage raised exc."""
    if isinstance(exc, errors.StorageClosedError):
        return Status.UNAVAILABLE
    for status, kind in _ERRORS.items():
        if isinstance(exc, kind):
            return status
    return Status.SERVER_ERROR


class Request(typing.NamedTuple):
    """One decoded request (a NamedTuple: built per frame, twice as fast as a frozen dataclass)."""

    op: Op
    flags: int
    request_id: int
    ledger_id: int
    entry_id: int
    arg: int
    master_key: bytes
    payload: bytes


class Response(typing.NamedTuple):
    """One decoded response."""

    op: Op
    status: Status
    request_id: int
    ledger_id: int
    entry_id: int
    last_add_confirmed: int
    body: bytes


def encode_request_header(
    op: Op,
    flags: int,
    request_id: int,
    ledger_id: int,
    entry_id: int,
    arg: int,
    master_key: bytes,
    payload_length: int = 0,
) -> bytes:
    """Header and master key; the payload (if any) is written right after, uncopied."""
    size = HEADER_SIZE - 4 + len(master_key) + payload_length
    header = HEADER.pack(
        size, MAGIC, op, flags, len(master_key), request_id, ledger_id, entry_id, arg
    )
    return header + master_key if master_key else header


def encode_request(request: Request) -> bytes:
    """A whole request frame (tests and tools; the client writes header and payload apart)."""
    return (
        encode_request_header(
            request.op,
            request.flags,
            request.request_id,
            request.ledger_id,
            request.entry_id,
            request.arg,
            request.master_key,
            len(request.payload),
        )
        + request.payload
    )


def encode_response_header(
    op: int,
    status: Status,
    request_id: int,
    ledger_id: int,
    entry_id: int,
    last_add_confirmed: int,
    body_length: int = 0,
) -> bytes:
    size = HEADER_SIZE - 4 + body_length
    return HEADER.pack(
        size, MAGIC, op, status, 0, request_id, ledger_id, entry_id, last_add_confirmed
    )


def encode_response(response: Response) -> bytes:
    return (
        encode_response_header(
            response.op,
            response.status,
            response.request_id,
            response.ledger_id,
            response.entry_id,
            response.last_add_confirmed,
            len(response.body),
        )
        + response.body
    )


def encode_error(request: Request, status: Status, message: str) -> bytes:
    body = message.encode("utf-8", "replace")
    return (
        encode_response_header(
            request.op, status, request.request_id, request.ledger_id, request.entry_id, -1,
            len(body),
        )
        + body
    )


class _Decoder:
    """Cuts a byte stream into frames; subclasses turn each frame into a record.

    Bytes of an incomplete frame wait in a buffer that grows by appends, and
    frames are parsed only once complete, so a large entry arriving in many
    chunks is copied once, not once per chunk.
    """

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES_DEFAULT) -> None:
        if max_frame_bytes < HEADER_SIZE:
            raise ValueError(f"max_frame_bytes must be at least {HEADER_SIZE}")
        self.max_frame_bytes = max_frame_bytes
        self._buffer = bytearray()
        self._needed = 4

    @property
    def buffered_bytes(self) -> int:
        return len(self._buffer)

    def _frame_size(self, data: bytes | bytearray | memoryview, pos: int) -> int:
        (size,) = _SIZE.unpack_from(data, pos)
        if size < HEADER_SIZE - 4 or size + 4 > self.max_frame_bytes:
            raise net_errors.MalformedFrameError(
                f"frame size {size} outside [{HEADER_SIZE - 4}, {self.max_frame_bytes - 4}]"
            )
        return int(size)

    def _decode_all(self, data: bytes | memoryview) -> tuple[list[object], int]:
        """Frames wholly inside data, and how many bytes they used."""
        out: list[object] = []
        pos = 0
        end_of_data = len(data)
        while end_of_data - pos >= 4:
            end = pos + 4 + self._frame_size(data, pos)
            if end > end_of_data:
                self._needed = end - pos
                break
            out.append(self._parse(data, pos, end))
            pos = end
        else:
            self._needed = 4
        return out, pos

    def _feed(self, data: bytes) -> list[object]:
        if not self._buffer:
            frames, used = self._decode_all(data)
            if used < len(data):
                self._buffer += data[used:] if used else data
            return frames
        self._buffer += data
        if len(self._buffer) < self._needed:
            return []
        with memoryview(self._buffer) as view:
            frames, used = self._decode_all(view)
        del self._buffer[:used]
        return frames

    def _parse(self, data: bytes | memoryview, start: int, end: int) -> object:
        raise NotImplementedError


class RequestDecoder(_Decoder):
    """Server side: bytes in, Requests out; MalformedFrameError on anything invalid."""

    def feed(self, data: bytes) -> list[Request]:
        return self._feed(data)  # type: ignore[return-value]

    def _parse(self, data: bytes | memoryview, start: int, end: int) -> Request:
        _, magic, op, flags, key_length, request_id, ledger_id, entry_id, arg = (
            HEADER.unpack_from(data, start)
        )
        kind = _OPS.get(op)
        if magic != MAGIC or kind is None:
            raise net_errors.MalformedFrameError(f"bad magic 0x{magic:04x} or unknown op {op}")
        if flags & ~KNOWN_FLAGS:
            raise net_errors.MalformedFrameError(f"unknown flags 0x{flags:02x}")
        key_start = start + HEADER_SIZE
        body_start = key_start + key_length
        if key_length > MASTER_KEY_MAX_BYTES or body_start > end:
            raise net_errors.MalformedFrameError(f"master key length {key_length} too long")
        if kind is not Op.ADD and body_start != end:
            raise net_errors.MalformedFrameError(f"{kind.name} request carries a body")
        return Request(
            kind,
            flags,
            request_id,
            ledger_id,
            entry_id,
            arg,
            bytes(data[key_start:body_start]),
            bytes(data[body_start:end]),
        )


class ResponseDecoder(_Decoder):
    """Client side: bytes in, Responses out; MalformedFrameError on anything invalid."""

    def feed(self, data: bytes) -> list[Response]:
        return self._feed(data)  # type: ignore[return-value]

    def _parse(self, data: bytes | memoryview, start: int, end: int) -> Response:
        _, magic, op, status, _, request_id, ledger_id, entry_id, lac = HEADER.unpack_from(
            data, start
        )
        kind, code = _OPS.get(op), _STATUSES.get(status)
        if magic != MAGIC or kind is None or code is None:
            raise net_errors.MalformedFrameError(
                f"bad magic 0x{magic:04x}, unknown op {op} or unknown status {status}"
            )
        return Response(
            kind, code, request_id, ledger_id, entry_id, lac, bytes(data[start + HEADER_SIZE:end])
        )
