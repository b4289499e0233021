"""The RocksDB side of the embedded metadata store: records, atomic operations, sharing.

A RocksDB directory can be opened once per process, but `pulsar standalone`
runs several services (broker, bookie, function worker) that each open "their"
metadata store on the same URL. So every store on one directory shares one
SharedDb: one Rdict and one commit thread that runs every operation. The single
thread makes each read-check-write atomic across all stores of the process
and delivers notifications in commit order.

Why a thread and not direct calls from the event loop: writes are synced to
the WAL (acknowledged metadata must survive SIGKILL and power loss), and an
fsync can take milliseconds on a busy disk; the event loop of a broker must
not stall for that. The operations waiting together share one sync (group
commit, see group_commit): writes go to the WAL unsynced, and the group is
answered and its notifications delivered once one `flush_wal(sync)` covers
them all.

Reads (`read_synced`, `children_synced`) do not go through that thread: they
run on the caller's own thread against a snapshot taken after each sync, so
they see exactly what callers have been told is written, and never wait
behind a group and its sync. The reads that are part of an operation (a
version check, the keys a recursive delete removes) use the latest state, on
the commit thread.

Each record is a fixed header (format, flags, version, creation and
modification time, owning session) followed by the value.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import struct
import threading
from collections.abc import Callable
from typing import TypeVar

import rocksdict

from pulsar_common.metadata import api, errors, group_commit, paths, watches

log = logging.getLogger(__name__)

T = TypeVar("T")

_HEADER = struct.Struct(">BBqqqQ")
_FORMAT = 1
_FLAG_EPHEMERAL = 0x01


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    value: bytes
    version: int
    creation_ms: int
    modification_ms: int
    ephemeral: bool
    session_id: int

    def encode(self) -> bytes:
        flags = _FLAG_EPHEMERAL if self.ephemeral else 0
        return _HEADER.pack(_FORMAT, flags, self.version, self.creation_ms,
                            self.modification_ms, self.session_id) + self.value

    @classmethod
    def decode(cls, raw: bytes) -> Record:
        fmt, flags, version, ctime, mtime, session = _HEADER.unpack_from(raw)
        if fmt != _FORMAT:
            raise errors.MetadataStoreError(f"unknown metadata record format {fmt}")
        return cls(value=raw[_HEADER.size:], version=version, creation_ms=ctime,
                   modification_ms=mtime, ephemeral=bool(flags & _FLAG_EPHEMERAL),
                   session_id=session)

    def stat(self, path: str) -> api.Stat:
        return api.Stat(path, self.version, self.creation_ms, self.modification_ms,
                        self.ephemeral)


@dataclasses.dataclass(frozen=True)
class _Subscriber:
    loop: asyncio.AbstractEventLoop
    watch: watches.QueueWatch
    key: str
    chroot: paths.Chroot


class SharedDb:
    """One open RocksDB directory, its commit thread and its watch subscribers."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.refs = 0
        self._next_session = 1
        self._subscribers: list[_Subscriber] = []
        self._subscribers_lock = threading.Lock()
        # Unsynced: the commit thread syncs the WAL once per group (see the module doc).
        self._unsynced_writes = rocksdict.WriteOptions()
        self._unsynced_writes.sync = False
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        os.makedirs(directory, exist_ok=True)
        try:
            self.db = rocksdict.Rdict(directory, options)
        except Exception as exc:
            raise errors.MetadataStoreError(f"cannot open RocksDB at {directory}: {exc}") from exc
        self._drop_stale_ephemerals()
        #: What the last sync made durable; read by any thread (see the module doc).
        self._synced: rocksdict.Snapshot | None = self.db.snapshot()
        self._commits = group_commit.CommitThread(self._sync, "metadata-rocksdb")

    def new_session(self) -> int:
        session, self._next_session = self._next_session, self._next_session + 1
        return session

    async def run(self, operation: Callable[[], T]) -> T:
        """Run operation on the commit thread; its result once what it (and its group)
        wrote is synced. RocksDB failures become MetadataStoreError."""
        return await self._commits.run(operation)

    def _sync(self) -> None:
        self.db.flush_wal(True)
        # Before the group's notifications and answers: whoever hears of it can read it.
        self._synced = self.db.snapshot()

    def read(self, key: str) -> Record | None:
        """On the commit thread: the latest record, unsynced writes of this group included."""
        raw = self.db.get(key.encode())
        return None if raw is None else Record.decode(raw)

    def read_synced(self, key: str) -> Record | None:
        """On any thread: key's record as of the last sync."""
        raw_key = key.encode()
        iterator = self._snapshot().iter()
        try:
            iterator.seek(raw_key)
            if not iterator.valid() or iterator.key() != raw_key:
                return None
            raw = iterator.value()
        except Exception as exc:
            raise errors.MetadataStoreError(f"RocksDB read failed: {exc}") from exc
        return Record.decode(raw)

    def children_synced(self, prefix: str) -> list[str]:
        """On any thread: names of the direct children under prefix as of the last sync."""
        try:
            return _children(self._snapshot().iter(), prefix)
        except Exception as exc:
            raise errors.MetadataStoreError(f"RocksDB read failed: {exc}") from exc

    def _snapshot(self) -> rocksdict.Snapshot:
        synced = self._synced
        if synced is None:
            raise errors.StoreClosedError("metadata store is closed")
        return synced

    def write(self, key: str, record: Record) -> None:
        """On the commit thread: put, durable when the group is synced."""
        self.db.put(key.encode(), record.encode(), self._unsynced_writes)
        self._commits.written()

    def remove(self, keys: list[str]) -> None:
        """On the commit thread: delete atomically, durable when the group is synced."""
        self._remove(keys)
        self._commits.written()

    def _remove(self, keys: list[str]) -> None:
        batch = rocksdict.WriteBatch(raw_mode=True)
        for key in keys:
            batch.delete(key.encode())
        self.db.write(batch, self._unsynced_writes)

    def scan(self, prefix: str) -> list[tuple[str, Record]]:
        """Every record whose key starts with prefix, in key order."""
        found: list[tuple[str, Record]] = []
        start = prefix.encode()
        for raw_key, raw in self.db.items(from_key=start):
            assert isinstance(raw_key, bytes)  # raw mode: keys are bytes
            if not raw_key.startswith(start):
                break
            found.append((raw_key.decode(), Record.decode(raw)))
        return found

    def _drop_stale_ephemerals(self) -> None:
        """Ephemeral keys belong to sessions of an earlier process: they are gone now."""
        stale = [key for key, record in self.scan("") if record.ephemeral]
        if stale:
            log.info("dropping %d ephemeral keys left by a previous process", len(stale))
            self._remove(stale)
            self._sync()

    def subscribe(self, subscriber: _Subscriber) -> None:
        with self._subscribers_lock:
            self._subscribers.append(subscriber)

    def unsubscribe(self, watch: watches.QueueWatch) -> None:
        with self._subscribers_lock:
            self._subscribers = [s for s in self._subscribers if s.watch is not watch]

    def publish(self, kind: api.NotificationType, key: str) -> None:
        """On the commit thread: notify the change once it is synced."""
        self._commits.after_sync(lambda: self._deliver(kind, key))

    def _deliver(self, kind: api.NotificationType, key: str) -> None:
        """Hand a committed change to every matching watch, on the watch's own loop."""
        with self._subscribers_lock:
            subscribers = list(self._subscribers)
        for sub in subscribers:
            if not paths.in_scope(sub.key, key, sub.watch.prefix):
                continue
            path = sub.chroot.path(key.encode())
            if path is None:
                continue
            try:
                sub.loop.call_soon_threadsafe(sub.watch.offer, api.Notification(kind, path))
            except RuntimeError:
                self.unsubscribe(sub.watch)  # its event loop is closed

    def close(self) -> None:
        self._commits.stop()
        self._synced = None
        self.db.close()


def _children(iterator: rocksdict.RdictIter, prefix: str) -> list[str]:
    """Names of the direct children under prefix; whole subtrees are skipped by seeking."""
    names: set[str] = set()
    iterator.seek(prefix.encode())
    while iterator.valid():
        key = iterator.key().decode()
        if not key.startswith(prefix):
            break
        name, _, below = key[len(prefix):].partition("/")
        names.add(name)
        if below:
            # Every key of this child's subtree sorts before prefix + name + "0".
            iterator.seek((prefix + name + "0").encode())
        else:
            iterator.next()
    return sorted(names)


_OPEN: dict[str, SharedDb] = {}
_OPEN_LOCK = threading.Lock()


def acquire(directory: str) -> SharedDb:
    """The process-wide SharedDb of directory, opened on first use."""
    key = os.path.realpath(directory)
    with _OPEN_LOCK:
        shared = _OPEN.get(key)
        if shared is None:
            shared = SharedDb(key)
            _OPEN[key] = shared
        shared.refs += 1
        return shared


def release(shared: SharedDb) -> None:
    """Drop one reference; the last one closes the database."""
    with _OPEN_LOCK:
        shared.refs -= 1
        if shared.refs > 0:
            return
        _OPEN.pop(shared.directory, None)
    shared.close()


def subscriber(watch: watches.QueueWatch, key: str, chroot: paths.Chroot) -> _Subscriber:
    return _Subscriber(asyncio.get_running_loop(), watch, key, chroot)
