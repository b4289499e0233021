"""Byte layouts of journal records and entry log records, and the scanner that reads them back.

Both files are runs of `length:u32 | crc32c:u32 | body`, little-endian, where the
checksum covers the body. A reader stops at the first record whose length runs
past the end of the file or whose checksum does not match: that is a torn tail
(a write cut short by a crash), never data to serve.

Journal bodies start with a type byte; entry log bodies are always entries.
No asyncio and no files here: pure encoding, so it is easy to test.
"""

from __future__ import annotations

import dataclasses
import enum
import mmap
import struct
from collections.abc import Iterator

import crc32c

#: Anything records are read from: file contents in memory or a mapped file.
Readable = bytes | memoryview | mmap.mmap

HEADER = struct.Struct("<II")
HEADER_SIZE = HEADER.size
#: ledger id, entry id, last add confirmed.
ENTRY_FIELDS = struct.Struct("<qqq")
ENTRY_FIELDS_SIZE = ENTRY_FIELDS.size
_TYPED_ENTRY_FIELDS = struct.Struct("<Bqqq")
_LEDGER_FIELD = struct.Struct("<Bq")
#: A record longer than this is treated as garbage (entries are at most a few MB).
MAX_RECORD_SIZE = 64 * 1024 * 1024


class RecordType(enum.IntEnum):
    ADD_ENTRY = 1
    FENCE = 2
    MASTER_KEY = 3
    DELETE_LEDGER = 4


@dataclasses.dataclass(frozen=True)
class JournalRecord:
    """One decoded journal record (payload and master_key are empty when not used)."""

    type: RecordType
    ledger_id: int
    entry_id: int = -1
    last_add_confirmed: int = -1
    payload: bytes = b""
    master_key: bytes = b""


#: A record as the buffers that make it up, in file order: the framed head (length,
#: checksum, fields) and the payload. Files are written with `writev` over such parts,
#: so an entry's payload is never copied on its way to the journal or an entry log.
Parts = tuple[bytes, bytes]


#: crc32c's `gil_release_mode`: keep the GIL (0) or release it for large inputs (-1).
#: Journal records are framed on the event loop thread, where letting go of the GIL for
#: the few microseconds of a checksum costs a hand-off back from the journal and flush
#: threads (py-spy put ~17 us per 64 KiB entry in framing on the loop thread, against
#: 3-5 us for the checksum itself); entry log records are framed on the flush thread,
#: which gains from letting the event loop run meanwhile.
_KEEP_GIL = 0
_RELEASE_GIL = -1


def _frame_parts(body_head: bytes, tail: bytes, gil_release_mode: int = _RELEASE_GIL) -> Parts:
    crc = crc32c.crc32c(tail, crc32c.crc32c(body_head), gil_release_mode)
    return HEADER.pack(len(body_head) + len(tail), crc) + body_head, tail


def _frame(body_head: bytes, tail: bytes) -> bytes:
    return b"".join(_frame_parts(body_head, tail))


def add_entry_parts(ledger_id: int, entry_id: int, lac: int, payload: bytes) -> Parts:
    """The journal record of an add, as parts (the payload itself is the second)."""
    return _frame_parts(
        _TYPED_ENTRY_FIELDS.pack(RecordType.ADD_ENTRY, ledger_id, entry_id, lac),
        payload,
        _KEEP_GIL,
    )


def add_entry_record(ledger_id: int, entry_id: int, lac: int, payload: bytes) -> bytes:
    return b"".join(add_entry_parts(ledger_id, entry_id, lac, payload))


def fence_record(ledger_id: int) -> bytes:
    return _frame(_LEDGER_FIELD.pack(RecordType.FENCE, ledger_id), b"")


def master_key_record(ledger_id: int, master_key: bytes) -> bytes:
    return _frame(_LEDGER_FIELD.pack(RecordType.MASTER_KEY, ledger_id), master_key)


def delete_ledger_record(ledger_id: int) -> bytes:
    return _frame(_LEDGER_FIELD.pack(RecordType.DELETE_LEDGER, ledger_id), b"")


def entry_log_parts(ledger_id: int, entry_id: int, lac: int, payload: bytes) -> Parts:
    """The entry log record of an entry, as parts (the payload itself is the second)."""
    return _frame_parts(ENTRY_FIELDS.pack(ledger_id, entry_id, lac), payload)


def entry_log_record(ledger_id: int, entry_id: int, lac: int, payload: bytes) -> bytes:
    return b"".join(entry_log_parts(ledger_id, entry_id, lac, payload))


def decode_journal_body(body: bytes) -> JournalRecord:
    kind = RecordType(body[0])
    if kind == RecordType.ADD_ENTRY:
        _, ledger, entry, lac = _TYPED_ENTRY_FIELDS.unpack_from(body)
        return JournalRecord(
            kind, ledger, entry, lac, payload=bytes(body[_TYPED_ENTRY_FIELDS.size :])
        )
    _, ledger = _LEDGER_FIELD.unpack_from(body)
    if kind == RecordType.MASTER_KEY:
        return JournalRecord(kind, ledger, master_key=bytes(body[_LEDGER_FIELD.size :]))
    return JournalRecord(kind, ledger)


def decode_entry_body(body: bytes) -> tuple[int, int, int, bytes]:
    """(ledger id, entry id, last add confirmed, payload) of an entry log record body."""
    ledger, entry, lac = ENTRY_FIELDS.unpack_from(body)
    return ledger, entry, lac, bytes(body[ENTRY_FIELDS_SIZE:])


def decode_stored_entry(body: bytes, in_journal: bool) -> tuple[int, int, int, bytes] | None:
    """(ledger id, entry id, last add confirmed, payload) of a record body read from an entry
    log, or from a journal file (an entry kept there); None for a journal record of another type."""
    if not in_journal:
        return decode_entry_body(body)
    if body[0] != RecordType.ADD_ENTRY:
        return None
    _, ledger, entry, lac = _TYPED_ENTRY_FIELDS.unpack_from(body)
    return ledger, entry, lac, bytes(body[_TYPED_ENTRY_FIELDS.size :])


_ADD_IDS = struct.Struct("<qq")


def add_entry_ids(head: bytes) -> tuple[int, int] | None:
    """(ledger id, entry id) from the head of a framed record (`Parts[0]`), None unless an add."""
    if (
        len(head) < HEADER_SIZE + _TYPED_ENTRY_FIELDS.size
        or head[HEADER_SIZE] != RecordType.ADD_ENTRY
    ):
        return None
    ledger, entry = _ADD_IDS.unpack_from(head, HEADER_SIZE + 1)
    return ledger, entry


def check_record(data: Readable, offset: int = 0) -> bytes | None:
    """The body of the record at offset if it is whole and its checksum holds, else None."""
    if len(data) - offset < HEADER_SIZE:
        return None
    length, crc = HEADER.unpack_from(data, offset)
    end = offset + HEADER_SIZE + length
    if length == 0 or length > MAX_RECORD_SIZE or end > len(data):
        return None
    body = bytes(data[offset + HEADER_SIZE : end])
    if crc32c.crc32c(body) != crc:
        return None
    return body


#: Journal files written with O_DIRECT are written in whole blocks of this many bytes: the
#: last one is padded with zeros, which a scan takes as the end of the records, not a tear.
DIRECT_WRITE_ALIGNMENT = 4096


def is_padding(data: Readable, offset: int) -> bool:
    """Whether data[offset:] is the zero padding of a direct write's last block."""
    rest = len(data) - offset
    return 0 < rest < DIRECT_WRITE_ALIGNMENT and bytes(data[offset:]).count(0) == rest


@dataclasses.dataclass
class ScanResult:
    #: Offset just past the last valid record: where a torn tail starts.
    valid_end: int = 0
    torn: bool = False


def scan(data: Readable, start: int, result: ScanResult) -> Iterator[tuple[int, bytes]]:
    """Yield (offset, body) of the valid records from start; result tells where they end."""
    offset = start
    result.valid_end = start
    while offset < len(data):
        body = check_record(data, offset)
        if body is None:
            result.torn = not is_padding(data, offset)
            return
        yield offset, body
        offset += HEADER_SIZE + len(body)
        result.valid_end = offset
