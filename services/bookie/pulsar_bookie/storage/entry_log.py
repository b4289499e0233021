"""Entry log files: where flushed entries live, appended in (ledger, entry) order.

Files are `<log id in hex>.log`, spread over the ledger directories by log id,
and start a new one when entryLogSizeLimit would be passed. One thread (the
flush/compaction thread) appends; any thread reads by location. Readers hold a
reference on the file while reading, so garbage collection can delete a log
without pulling it from under a read: a reader that finds its log gone looks
the location up again.

A location may also name a journal file: entries of at least
journalResidentEntryMinBytes are not copied to an entry log at a flush, the
index points at their journal record instead (see engine.py). Such log ids
have JOURNAL_LOG_BIT set, the journal's number in the bits below it and the
journal file's id in the low bits; they are read, scanned and deleted here
like entry logs, and counted in the same usage for garbage collection.
"""

from __future__ import annotations

import contextlib
import dataclasses
import mmap
import os
import pathlib
import struct
import threading
from collections.abc import Iterator

from pulsar_bookie.storage import journal, records

SUFFIX = ".log"
MAGIC = b"PYBKLOG1"
FILE_HEADER = struct.Struct("<8sQ")
LOCATION = struct.Struct("<III")
#: Entry log files kept open for reading at once.
OPEN_LOGS_MAX = 256
#: Set in the log id of a location in a journal file.
JOURNAL_LOG_BIT = 1 << 31
_JOURNAL_NUMBER_SHIFT = 24
#: Journal files (per journal) and journals that locations can name.
JOURNAL_FILE_ID_MAX = (1 << _JOURNAL_NUMBER_SHIFT) - 1
JOURNALS_MAX = 1 << (31 - _JOURNAL_NUMBER_SHIFT)


def journal_log_id(journal_number: int, file_id: int) -> int:
    """The log id by which locations name a journal file."""
    assert 0 <= journal_number < JOURNALS_MAX and 0 < file_id <= JOURNAL_FILE_ID_MAX
    return JOURNAL_LOG_BIT | (journal_number << _JOURNAL_NUMBER_SHIFT) | file_id


def is_journal_log(log_id: int) -> bool:
    return bool(log_id & JOURNAL_LOG_BIT)


def split_journal_log_id(log_id: int) -> tuple[int, int]:
    """(journal number, journal file id) of a journal log id."""
    return (log_id & ~JOURNAL_LOG_BIT) >> _JOURNAL_NUMBER_SHIFT, log_id & JOURNAL_FILE_ID_MAX


@dataclasses.dataclass(frozen=True)
class Location:
    log_id: int
    offset: int
    size: int

    def pack(self) -> bytes:
        return LOCATION.pack(self.log_id, self.offset, self.size)

    @classmethod
    def unpack(cls, data: bytes) -> Location:
        return cls(*LOCATION.unpack(data))


class LogGoneError(Exception):
    """The entry log was deleted by garbage collection; look the location up again."""


class _ReadHandle:
    __slots__ = ("doomed", "fd", "refs")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.refs = 0
        self.doomed = False


# Per log id: ledger id -> bytes of that ledger's entries in the log.
LedgerUsage = dict[int, dict[int, int]]


class EntryLogger:
    def __init__(
        self,
        directories: list[pathlib.Path],
        size_limit: int,
        journal_directories: list[pathlib.Path] | None = None,
    ) -> None:
        self.directories = directories
        self.journal_directories = journal_directories or []
        self.size_limit = size_limit
        self._lock = threading.Lock()
        self._readers: dict[int, _ReadHandle] = {}
        self._deleted: set[int] = set()
        self._write_fd = -1
        self.current_log_id = 0
        self._current_size = 0

    # ----- files -----

    def path(self, log_id: int) -> pathlib.Path:
        if is_journal_log(log_id):
            number, file_id = split_journal_log_id(log_id)
            return journal.file_path(self.journal_directories[number], file_id)
        return self.directories[log_id % len(self.directories)] / f"{log_id:x}{SUFFIX}"

    def log_ids(self) -> list[int]:
        """The entry logs on disk (journal files are not listed)."""
        ids = []
        for directory in self.directories:
            for path in directory.glob("*" + SUFFIX):
                with contextlib.suppress(ValueError):
                    ids.append(int(path.stem, 16))
        return sorted(ids)

    def disk_usage_bytes(self) -> int:
        return sum(self.path(log_id).stat().st_size for log_id in self.log_ids())

    # ----- writing (one thread) -----

    def start(self) -> None:
        """The next append starts a new log after every existing one (old tails are never appended to)."""
        existing = self.log_ids()
        self.current_log_id = (existing[-1] + 1) if existing else 1

    def _roll(self, log_id: int) -> None:
        if self._write_fd >= 0:
            os.fsync(self._write_fd)
            os.close(self._write_fd)
        path = self.path(log_id)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        os.write(fd, FILE_HEADER.pack(MAGIC, log_id))
        self._write_fd, self.current_log_id, self._current_size = fd, log_id, FILE_HEADER.size
        journal.fsync_directory(path.parent)

    def append(
        self, entries: list[tuple[int, int, int, bytes]]
    ) -> tuple[list[Location], LedgerUsage]:
        """Append (ledger, entry, lac, payload) records; their locations and bytes per log and ledger.

        Data is written but not synced: call sync() before recording locations.
        """
        if self._write_fd < 0:
            self._roll(self.current_log_id)
        locations: list[Location] = []
        usage: LedgerUsage = {}
        # Each record's head and payload, written with writev: payloads are not copied.
        parts: list[bytes] = []
        offset = start = self._current_size
        for ledger, entry, lac, payload in entries:
            head, body = records.entry_log_parts(ledger, entry, lac, payload)
            size = len(head) + len(body)
            if offset + size > self.size_limit and offset > FILE_HEADER.size:
                self._write_all(parts, offset - start)
                parts = []
                self._roll(self.current_log_id + 1)
                offset = start = self._current_size
            parts += (head, body)
            locations.append(Location(self.current_log_id, offset, size))
            per_ledger = usage.setdefault(self.current_log_id, {})
            per_ledger[ledger] = per_ledger.get(ledger, 0) + size
            offset += size
        self._write_all(parts, offset - start)
        return locations, usage

    def _write_all(self, parts: list[bytes], size: int) -> None:
        self._current_size += size
        try:
            journal.write_all(self._write_fd, parts)
        except OSError:
            # A partial write (a full disk) leaves the tail unknown, and so every later
            # offset: the next append starts a fresh log. The failed flush records nothing.
            os.close(self._write_fd)
            self._write_fd = -1
            self.current_log_id += 1
            raise

    def sync(self) -> None:
        """Make everything appended so far durable (logs rolled over were synced on roll)."""
        if self._write_fd >= 0:
            os.fsync(self._write_fd)

    def close(self) -> None:
        if self._write_fd >= 0:
            os.fsync(self._write_fd)
            os.close(self._write_fd)
            self._write_fd = -1
        with self._lock:
            for handle in self._readers.values():
                os.close(handle.fd)
            self._readers.clear()

    # ----- reading (any thread) -----

    def _acquire(self, log_id: int) -> _ReadHandle:
        with self._lock:
            if log_id in self._deleted:
                raise LogGoneError(log_id)
            handle = self._readers.get(log_id)
            if handle is None:
                try:
                    handle = _ReadHandle(os.open(self.path(log_id), os.O_RDONLY))
                except FileNotFoundError as exc:
                    raise LogGoneError(log_id) from exc
                self._readers[log_id] = handle
            handle.refs += 1
            self._close_idle_handles()
            return handle

    def _close_idle_handles(self) -> None:
        """Keep at most OPEN_LOGS_MAX files open for reading (oldest opened, idle ones go first)."""
        excess = len(self._readers) - OPEN_LOGS_MAX
        for log_id in [lid for lid, h in self._readers.items() if h.refs == 0][: max(excess, 0)]:
            os.close(self._readers.pop(log_id).fd)

    def _release(self, handle: _ReadHandle) -> None:
        with self._lock:
            handle.refs -= 1
            if handle.doomed and handle.refs == 0:
                os.close(handle.fd)

    def read(self, log_id: int, offset: int, size: int) -> bytes:
        """Raw bytes at a location (one or more consecutive records)."""
        handle = self._acquire(log_id)
        try:
            return os.pread(handle.fd, size, offset)
        finally:
            self._release(handle)

    def scan(self, log_id: int) -> Iterator[tuple[Location, bytes]]:
        """Every valid record of a log: (location, body), for compaction (a journal file's
        bodies are journal record bodies: `records.decode_stored_entry` reads both)."""
        handle = self._acquire(log_id)
        start = 0 if is_journal_log(log_id) else FILE_HEADER.size
        try:
            if os.fstat(handle.fd).st_size <= start:
                return
            with mmap.mmap(handle.fd, 0, access=mmap.ACCESS_READ) as data:
                result = records.ScanResult()
                for offset, body in records.scan(data, start, result):
                    yield Location(log_id, offset, records.HEADER_SIZE + len(body)), body
        finally:
            self._release(handle)

    def delete(self, log_id: int) -> None:
        """Remove a log; reads in progress finish on their open handle."""
        with self._lock:
            self._deleted.add(log_id)
            handle = self._readers.pop(log_id, None)
            if handle is not None:
                handle.doomed = True
                if handle.refs == 0:
                    os.close(handle.fd)
        self.path(log_id).unlink(missing_ok=True)
