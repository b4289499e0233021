"""The cluster metadata store: etcd v3 through aetcd.

Versions: our version is etcd's per-key `version` minus one, so a new key has
version 0 and each put adds one; deleting and re-creating starts again at 0.
Compare-and-set runs as etcd transactions (create_revision == 0 for
create-if-absent, version or mod_revision equality otherwise). Values carry a
small time header (see etcd_kv), so a put that keeps the creation time reads
the key first and writes only if it did not change meanwhile.

Ephemeral keys are attached to the store's lease (see etcd_session for what
happens when it is lost). Children are found by a keys-only range scan of
"<path>/". Every key lives under the store's chroot, if it has one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aetcd

from pulsar_common import clock
from pulsar_common.metadata import (
    api,
    election,
    errors,
    etcd_kv,
    etcd_session,
    etcd_tls,
    etcd_watch,
    paths,
    watches,
)

log = logging.getLogger(__name__)

#: Default time limit of one etcd call.
OPERATION_TIMEOUT_S = 10.0
#: How many times a put retries when the key keeps changing under it.
PUT_RETRIES_MAX = 100
#: gRPC channel settings: reconnect within about a second once etcd is back (gRPC's
#: own default backs off up to two minutes), and notice a silent peer by pinging
#: (no more often than etcd's default --grpc-keepalive-min-time of 5 s allows).
CHANNEL_OPTIONS = {
    "grpc.initial_reconnect_backoff_ms": 100,
    "grpc.min_reconnect_backoff_ms": 100,
    "grpc.max_reconnect_backoff_ms": 1000,
    "grpc.keepalive_time_ms": 10_000,
    "grpc.keepalive_timeout_ms": 5_000,
}


class EtcdMetadataStore:
    """A MetadataStore on etcd; build it with `connect`."""

    def __init__(self, client: aetcd.Client, chroot: str, session_timeout_s: float,
                 operation_timeout_s: float) -> None:
        self._client = client
        self._chroot = paths.Chroot(chroot)
        self._kv = etcd_kv.EtcdKv(client, operation_timeout_s)
        self._listeners = watches.SessionListeners()
        self._session = etcd_session.EtcdSession(
            client, session_timeout_s, self._listeners, operation_timeout_s)
        self._watches: dict[watches.QueueWatch, etcd_watch.EtcdWatch] = {}
        self._next_id_lock = asyncio.Lock()
        self._closed = False

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        chroot: str = "",
        session_timeout_s: float = 30.0,
        operation_timeout_s: float = OPERATION_TIMEOUT_S,
        tls: etcd_tls.EtcdTls | None = None,
    ) -> EtcdMetadataStore:
        """Open a session on etcd at host:port (host may be a gRPC target prefix, see factory);
        over TLS with tls."""
        if tls is None:
            client = aetcd.Client(host=host, port=port, timeout=operation_timeout_s,
                                  options=dict(CHANNEL_OPTIONS))
        else:
            client = etcd_tls.TlsClient(tls, host=host, port=port, timeout=operation_timeout_s,
                                        options=dict(CHANNEL_OPTIONS))
        store = cls(client, chroot, session_timeout_s, operation_timeout_s)
        try:
            await store._kv.range(b"/")  # fails fast when etcd is unreachable
            await store._session.start()
        except BaseException:
            await client.close()
            raise
        return store

    @property
    def lease_id(self) -> int | None:
        """The etcd lease of this store's session (None while it is lost)."""
        return self._session.lease_id

    def _key(self, path: str) -> bytes:
        return self._chroot.key(path)

    def _check_open(self) -> None:
        if self._closed:
            raise errors.StoreClosedError("metadata store is closed")

    def _stat(self, path: str, kv: Any) -> api.Stat:
        decoded = etcd_kv.decode_value(kv.value)
        return api.Stat(path, int(kv.version) - 1, decoded.creation_ms,
                        decoded.modification_ms, kv.lease != 0)

    async def get(self, path: str) -> api.GetResult | None:
        self._check_open()
        kv = await self._kv.get(self._key(path))
        if kv is None:
            return None
        return api.GetResult(etcd_kv.decode_value(kv.value).value, self._stat(path, kv))

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
        self._check_open()
        key = self._key(path)
        lease = self._session.lease_for_put() if ephemeral else 0
        if expected_version == api.VERSION_ABSENT:
            return await self._create(path, key, value, lease)
        current = await self._kv.get(key)
        for _ in range(PUT_RETRIES_MAX):
            _check_version(path, current, expected_version)
            now = clock.wall_clock_ms()
            if current is None:
                ctime, guard = now, etcd_kv.compare_absent(key)
            else:
                ctime = etcd_kv.decode_value(current.value).creation_ms or now
                guard = etcd_kv.compare_mod(key, current.mod_revision)
            response = await self._kv.txn(
                [guard], [etcd_kv.op_put(key, etcd_kv.encode_value(value, ctime, now), lease)],
                [etcd_kv.op_get(key)])
            if response.succeeded:
                version = 0 if current is None else int(current.version)
                return api.Stat(path, version, ctime, now, lease != 0)
            current = etcd_kv.first_range_kv(response)
        raise errors.StoreUnavailableError(f"{path} kept changing; gave up after "
                                           f"{PUT_RETRIES_MAX} attempts")

    async def _create(self, path: str, key: bytes, value: bytes, lease: int) -> api.Stat:
        now = clock.wall_clock_ms()
        response = await self._kv.txn(
            [etcd_kv.compare_absent(key)],
            [etcd_kv.op_put(key, etcd_kv.encode_value(value, now, now), lease)])
        if not response.succeeded:
            raise errors.AlreadyExistsError(f"{path} already exists")
        return api.Stat(path, 0, now, now, lease != 0)

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        self._check_open()
        key = self._key(path)
        guard = (etcd_kv.compare_exists(key) if expected_version is None
                 else etcd_kv.compare_version(key, expected_version + 1))
        response = await self._kv.txn([guard], [etcd_kv.op_delete(key)], [etcd_kv.op_get(key)])
        if response.succeeded:
            return
        current = etcd_kv.first_range_kv(response)
        if current is None:
            raise errors.NotFoundError(f"{path} does not exist")
        raise errors.BadVersionError(
            f"{path} has version {int(current.version) - 1}, expected {expected_version}")

    async def delete_recursive(self, path: str) -> None:
        self._check_open()
        key = self._key(path)
        below = paths.children_prefix(key.decode()).encode()
        ops = [etcd_kv.op_delete(below, etcd_kv.prefix_end(below))]
        if below != key:
            ops.append(etcd_kv.op_delete(key))
        await self._kv.txn([], ops)

    async def get_children(self, path: str) -> list[str]:
        self._check_open()
        below = paths.children_prefix(self._key(path).decode()).encode()
        kvs = await self._kv.range(below, etcd_kv.prefix_end(below), keys_only=True)
        names = {kv.key[len(below):].decode().split("/", 1)[0] for kv in kvs}
        names.discard("")
        return sorted(names)

    def watch(self, path: str, *, prefix: bool = False) -> api.Watch:
        self._check_open()
        paths.validate(path)
        queue = watches.QueueWatch(path, prefix, on_close=self._unwatch)
        self._watches[queue] = etcd_watch.EtcdWatch(
            self._client, self._chroot, queue, self._kv.revision + 1)
        return queue

    async def _unwatch(self, queue: watches.QueueWatch) -> None:
        pump = self._watches.pop(queue, None)
        if pump is not None:
            await pump.stop()

    def register_session_listener(self, listener: api.SessionListener) -> None:
        self._listeners.add(listener)

    def leader_election(self, path: str) -> api.LeaderElection:
        return election.StoreLeaderElection(self, paths.validate(path))

    async def next_id(self, path: str) -> int:
        """Ids start at 0; the counter key holds the last id handed out (decimal text).

        Callers in this store take turns (a lock), so the compare-and-set loop
        only retries against other processes.
        """
        self._check_open()
        key = self._key(path)
        async with self._next_id_lock:
            current = await self._kv.get(key)
            while True:
                now = clock.wall_clock_ms()
                if current is None:
                    next_id, ctime, guard = 0, now, etcd_kv.compare_absent(key)
                else:
                    decoded = etcd_kv.decode_value(current.value)
                    next_id, ctime = _counter(path, decoded.value) + 1, decoded.creation_ms
                    guard = etcd_kv.compare_mod(key, current.mod_revision)
                value = etcd_kv.encode_value(str(next_id).encode(), ctime, now)
                response = await self._kv.txn(
                    [guard], [etcd_kv.op_put(key, value)], [etcd_kv.op_get(key)])
                if response.succeeded:
                    return next_id
                current = etcd_kv.first_range_kv(response)

    async def close(self) -> None:
        """Revoke the session lease (its ephemeral keys vanish), end watches, disconnect."""
        if self._closed:
            return
        self._closed = True
        for queue in list(self._watches):
            await queue.close()
        await self._session.close()
        await self._client.close()


def _check_version(path: str, current: Any | None, expected: int | None) -> None:
    if expected is None:
        return
    if current is None:
        raise errors.NotFoundError(f"{path} does not exist")
    if int(current.version) - 1 != expected:
        raise errors.BadVersionError(
            f"{path} has version {int(current.version) - 1}, expected {expected}")


def _counter(path: str, value: bytes) -> int:
    try:
        return int(value)
    except ValueError as exc:
        raise errors.MetadataStoreError(f"{path} is not an id counter: {value[:40]!r}") from exc
