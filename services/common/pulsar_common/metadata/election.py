"""Leader election on one path, built only on the MetadataStore contract.

The leader is whoever created the path as an ephemeral key (create-if-absent).
Candidates watch the path and try again when it is deleted, which happens on
release() or when the leader's session ends (its lease expires, its store is
closed or its process dies). A leader that loses its session or its key stops
being leader; it must call acquire() again to compete once more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref

from pulsar_common.metadata import api, errors, tasks

log = logging.getLogger(__name__)


class StoreLeaderElection:
    """A LeaderElection for one path of one store (one candidate)."""

    def __init__(self, store: api.MetadataStore, path: str) -> None:
        self._store = store
        self._path = path
        self._stat: api.Stat | None = None
        self._monitor: asyncio.Task[None] | None = None
        store.register_session_listener(_weak_listener(self))

    @property
    def path(self) -> str:
        return self._path

    @property
    def is_leader(self) -> bool:
        return self._stat is not None

    async def acquire(self, value: bytes, timeout_s: float | None = None) -> bool:
        """Become leader publishing value; wait up to timeout_s (forever when None).

        The timeout bounds only the wait for another leader's key to go, never the create:
        a create cancelled after the store made the key would leave our own ephemeral key
        behind, unknown to us, and every candidate (us included) would wait for it forever."""
        if self.is_leader:
            return True
        loop = asyncio.get_running_loop()
        deadline = None if timeout_s is None else loop.time() + timeout_s
        while not await self._try_once(value, deadline):
            if deadline is not None and loop.time() >= deadline:
                return False
        return True

    async def _try_once(self, value: bytes, deadline: float | None) -> bool:
        """One attempt: create the key, or wait (until deadline) for the leader's to go."""
        watch = self._store.watch(self._path)
        try:
            try:
                stat = await self._store.put(
                    self._path, value, api.VERSION_ABSENT, ephemeral=True)
            except errors.AlreadyExistsError:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout_at(deadline):
                        await _wait_for_deletion(watch)
                return False
        finally:
            await watch.close()
        self._stat = stat
        self._monitor = asyncio.create_task(self._watch_own_key(self._store.watch(self._path)))
        log.info("became leader of %s", self._path)
        return True

    async def _watch_own_key(self, watch: api.Watch) -> None:
        """Leadership ends when the key goes away or the store stops watching it."""
        try:
            await _wait_for_deletion(watch)
        except errors.MetadataStoreError:
            log.warning("lost the watch on leader key %s; giving up leadership", self._path)
        finally:
            await watch.close()
            if self._stat is not None:
                log.warning("leader key %s is gone; no longer leader", self._path)
            self._stat = None

    async def leader_value(self) -> bytes | None:
        result = await self._store.get(self._path)
        return None if result is None else result.value

    async def release(self) -> None:
        """Give up leadership (deletes our key, only if it is still ours)."""
        stat, self._stat = self._stat, None
        await self._stop_monitor()
        if stat is None:
            return
        with contextlib.suppress(errors.NotFoundError, errors.BadVersionError,
                                 errors.StoreClosedError, errors.SessionLostError):
            await self._store.delete(self._path, stat.version)

    async def _stop_monitor(self) -> None:
        monitor, self._monitor = self._monitor, None
        if monitor is not None:
            await tasks.cancel_and_wait(monitor)

    def _on_session_event(self, event: api.SessionEvent) -> None:
        if event is api.SessionEvent.SESSION_LOST and self._stat is not None:
            log.warning("session lost; no longer leader of %s", self._path)
            self._stat = None


def _weak_listener(candidate: StoreLeaderElection) -> api.SessionListener:
    """A session listener that does not keep an abandoned election object alive."""
    method = weakref.WeakMethod(candidate._on_session_event)

    def listener(event: api.SessionEvent) -> None:
        bound = method()
        if bound is not None:
            bound(event)

    return listener


async def _wait_for_deletion(watch: api.Watch) -> None:
    """Return when the watched key is deleted or the watch ends."""
    async for notification in watch:
        if notification.type is api.NotificationType.DELETED:
            return
