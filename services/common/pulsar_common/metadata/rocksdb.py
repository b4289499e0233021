"""The embedded metadata store of `pulsar standalone`: RocksDB in the broker's own process.

Every write is synced to RocksDB's WAL before it is acknowledged, so
metadata a caller saw written survives SIGKILL. Each store instance is one
session: its ephemeral keys vanish when it is closed, and all ephemeral keys
vanish when the process restarts (they are dropped when the directory is
opened). The session cannot be lost otherwise, so session listeners are
never called. Several stores on one directory in one process share the
database (see rocksdb_engine) and see each other's changes and watches,
like several clients of one etcd.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from pulsar_common import clock
from pulsar_common.metadata import api, election, errors, paths, rocksdb_engine, watches

T = TypeVar("T")
Record = rocksdb_engine.Record


class RocksdbMetadataStore:
    """A MetadataStore over a local RocksDB directory (open with `open`)."""

    def __init__(self, shared: rocksdb_engine.SharedDb, chroot: str = "") -> None:
        self._shared = shared
        self._chroot = paths.Chroot(chroot)
        self._session = shared.new_session()
        self._ephemeral_keys: set[str] = set()
        self._watches: set[watches.QueueWatch] = set()
        self._listeners = watches.SessionListeners()
        self._closed = False

    @classmethod
    async def open(cls, directory: str, *, chroot: str = "") -> RocksdbMetadataStore:
        shared = await asyncio.to_thread(rocksdb_engine.acquire, directory)
        try:
            return cls(shared, chroot)
        except BaseException:
            await asyncio.to_thread(rocksdb_engine.release, shared)
            raise

    def _key(self, path: str) -> str:
        return self._chroot.key(path).decode()

    def _check_open(self) -> None:
        if self._closed:
            raise errors.StoreClosedError("metadata store is closed")

    async def _run(self, operation: Callable[[], T]) -> T:
        self._check_open()
        return await self._shared.run(operation)

    async def get(self, path: str) -> api.GetResult | None:
        """As of the last sync, on the caller's thread (see rocksdb_engine)."""
        self._check_open()
        record = self._shared.read_synced(self._key(path))
        return None if record is None else api.GetResult(record.value, record.stat(path))

    async def exists(self, path: str) -> bool:
        return await self.get(path) is not None

    async def put(
        self,
        path: str,
        value: bytes,
        expected_version: int | None = None,
        *,
        ephemeral: bool = False,
    ) -> api.Stat:
        key = self._key(path)
        return await self._run(lambda: self._put(path, key, value, expected_version, ephemeral))

    def _put(self, path: str, key: str, value: bytes, expected: int | None,
             ephemeral: bool) -> api.Stat:
        current = self._shared.read(key)
        _check_version(path, current, expected)
        now = clock.wall_clock_ms()
        record = Record(
            value=bytes(value),
            version=0 if current is None else current.version + 1,
            creation_ms=now if current is None else current.creation_ms,
            modification_ms=now,
            ephemeral=ephemeral,
            session_id=self._session if ephemeral else 0,
        )
        self._shared.write(key, record)
        if ephemeral:
            self._ephemeral_keys.add(key)
        kind = api.NotificationType.CREATED if current is None else api.NotificationType.MODIFIED
        self._shared.publish(kind, key)
        return record.stat(path)

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        key = self._key(path)
        await self._run(lambda: self._delete(path, key, expected_version))

    def _delete(self, path: str, key: str, expected: int | None) -> None:
        current = self._shared.read(key)
        if current is None:
            raise errors.NotFoundError(f"{path} does not exist")
        if expected is not None and current.version != expected:
            raise errors.BadVersionError(
                f"{path} has version {current.version}, expected {expected}")
        self._shared.remove([key])
        self._shared.publish(api.NotificationType.DELETED, key)

    async def delete_recursive(self, path: str) -> None:
        key = self._key(path)
        await self._run(lambda: self._delete_recursive(key))

    def _delete_recursive(self, key: str) -> None:
        doomed = [k for k, _ in self._shared.scan(paths.children_prefix(key))]
        if key != "/" and self._shared.read(key) is not None:
            doomed.append(key)
        if not doomed:
            return
        self._shared.remove(doomed)
        for gone in doomed:
            self._shared.publish(api.NotificationType.DELETED, gone)

    async def get_children(self, path: str) -> list[str]:
        """As of the last sync, on the caller's thread (see rocksdb_engine)."""
        self._check_open()
        return self._shared.children_synced(paths.children_prefix(self._key(path)))

    def watch(self, path: str, *, prefix: bool = False) -> api.Watch:
        if self._closed:
            raise errors.StoreClosedError("metadata store is closed")
        watch = watches.QueueWatch(path, prefix, on_close=self._unwatch)
        self._shared.subscribe(rocksdb_engine.subscriber(watch, self._key(path), self._chroot))
        self._watches.add(watch)
        return watch

    async def _unwatch(self, watch: watches.QueueWatch) -> None:
        self._shared.unsubscribe(watch)
        self._watches.discard(watch)

    def register_session_listener(self, listener: api.SessionListener) -> None:
        self._listeners.add(listener)

    def leader_election(self, path: str) -> api.LeaderElection:
        return election.StoreLeaderElection(self, paths.validate(path))

    async def next_id(self, path: str) -> int:
        """Ids start at 0; the counter key holds the last id handed out (decimal text)."""
        key = self._key(path)
        return await self._run(lambda: self._next_id(key))

    def _next_id(self, key: str) -> int:
        current = self._shared.read(key)
        now = clock.wall_clock_ms()
        if current is None:
            record = Record(value=b"0", version=0, creation_ms=now, modification_ms=now,
                            ephemeral=False, session_id=0)
        else:
            record = Record(value=str(int(current.value) + 1).encode(),
                            version=current.version + 1, creation_ms=current.creation_ms,
                            modification_ms=now, ephemeral=False, session_id=0)
        self._shared.write(key, record)
        self._shared.publish(
            api.NotificationType.CREATED if current is None else api.NotificationType.MODIFIED,
            key)
        return int(record.value)

    async def close(self) -> None:
        """End the session: its ephemeral keys are deleted and its watches end."""
        if self._closed:
            return
        self._closed = True
        await self._shared.run(self._drop_own_ephemerals)
        for watch in list(self._watches):
            await watch.close()
        await asyncio.to_thread(rocksdb_engine.release, self._shared)

    def _drop_own_ephemerals(self) -> None:
        mine = []
        for key in sorted(self._ephemeral_keys):
            record = self._shared.read(key)
            if record is not None and record.ephemeral and record.session_id == self._session:
                mine.append(key)
        if mine:
            self._shared.remove(mine)
            for key in mine:
                self._shared.publish(api.NotificationType.DELETED, key)
        self._ephemeral_keys.clear()


def _check_version(path: str, current: Record | None, expected: int | None) -> None:
    if expected is None:
        return
    if expected == api.VERSION_ABSENT:
        if current is not None:
            raise errors.AlreadyExistsError(f"{path} already exists")
        return
    if current is None:
        raise errors.NotFoundError(f"{path} does not exist")
    if current.version != expected:
        raise errors.BadVersionError(
            f"{path} has version {current.version}, expected {expected}")
