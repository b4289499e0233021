"""The etcd session of one store: a lease that its ephemeral keys are attached to.

A background task refreshes the lease every third of its TTL. When a refresh
cannot reach etcd, listeners hear CONNECTION_LOST; when it works again,
RECONNECTED. The session is lost when etcd says the lease is gone (it expired
or someone revoked it), or when no refresh has succeeded for a whole TTL
(etcd has expired it by then, or will treat it as expired). Listeners then
hear SESSION_LOST, and ephemeral puts fail with SessionLostError until a new
lease is granted, after which listeners hear SESSION_REESTABLISHED and new
ephemeral keys go on the new lease. Keys of the lost session are not
re-created: their owners (ownerships, registrations, leader elections) must
react to SESSION_LOST and create them again. A lease declared lost while etcd
was unreachable is revoked as soon as etcd answers again, so its keys are
gone even if etcd extended the lease meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time

import aetcd

from pulsar_common.metadata import api, errors, etcd_kv, tasks, watches

log = logging.getLogger(__name__)

#: How often to retry while etcd is unreachable or the session is lost.
RETRY_INTERVAL_S = 0.25


class EtcdSession:
    """Grants, keeps alive and revokes the lease of one store."""

    def __init__(self, client: aetcd.Client, session_timeout_s: float,
                 listeners: watches.SessionListeners, timeout_s: float) -> None:
        self._client = client
        self._requested_ttl_s = max(1, math.ceil(session_timeout_s))
        self._listeners = listeners
        self._timeout_s = timeout_s
        self._lease_id: int | None = None
        self._ttl_s = float(self._requested_ttl_s)
        self._last_refresh = time.monotonic()
        self._connected = True
        self._stale_leases: list[int] = []
        self._task: asyncio.Task[None] | None = None

    @property
    def lease_id(self) -> int | None:
        """The live lease, None while the session is lost."""
        return self._lease_id

    def lease_for_put(self) -> int:
        if self._lease_id is None:
            raise errors.SessionLostError("the metadata session is lost; ephemeral keys refused")
        return self._lease_id

    async def start(self) -> None:
        await self._grant()
        self._task = asyncio.create_task(self._keep_alive(), name="etcd-lease-keepalive")

    async def _grant(self) -> None:
        with etcd_kv.translated("granting a lease"):
            lease = await asyncio.wait_for(self._client.lease(self._requested_ttl_s),
                                           self._timeout_s)
        self._lease_id = int(lease.id)
        self._ttl_s = float(lease.ttl)
        self._last_refresh = time.monotonic()
        log.info("etcd session lease %x granted, ttl %ss", self._lease_id, lease.ttl)

    async def _keep_alive(self) -> None:
        while True:
            healthy = self._connected and self._lease_id is not None
            await asyncio.sleep(self._ttl_s / 3 if healthy else RETRY_INTERVAL_S)
            try:
                await self._step()
            except errors.StoreUnavailableError as exc:
                self._on_unreachable(exc)
            except Exception:
                log.exception("etcd lease keep-alive failed")

    async def _step(self) -> None:
        if self._lease_id is None:
            await self._revoke_stale()
            await self._grant()
            self._on_reachable()
            self._listeners.emit(api.SessionEvent.SESSION_REESTABLISHED)
            return
        with etcd_kv.translated("a lease keep-alive"):
            reply = await asyncio.wait_for(self._client.refresh_lease(self._lease_id),
                                           max(self._ttl_s / 3, 0.5))
        if reply is None or reply.TTL <= 0:
            self._on_reachable()
            self._lose(f"lease {self._lease_id:x} expired or was revoked")
            return
        self._last_refresh = time.monotonic()
        self._on_reachable()

    def _on_reachable(self) -> None:
        if not self._connected:
            self._connected = True
            self._listeners.emit(api.SessionEvent.RECONNECTED)

    def _on_unreachable(self, exc: Exception) -> None:
        if self._connected:
            log.warning("etcd unreachable: %s", exc)
            self._connected = False
            self._listeners.emit(api.SessionEvent.CONNECTION_LOST)
        overdue = time.monotonic() - self._last_refresh > self._ttl_s
        if self._lease_id is not None and overdue:
            self._stale_leases.append(self._lease_id)
            self._lose(f"no keep-alive for {self._ttl_s}s")

    def _lose(self, why: str) -> None:
        log.warning("etcd session lost: %s", why)
        self._lease_id = None
        self._listeners.emit(api.SessionEvent.SESSION_LOST)

    async def _revoke_stale(self) -> None:
        while self._stale_leases:
            # SessionLostError here means the lease has already expired: fine.
            with (contextlib.suppress(errors.SessionLostError),
                  etcd_kv.translated("revoking a lost lease")):
                await asyncio.wait_for(self._client.revoke_lease(self._stale_leases[0]),
                                       self._timeout_s)
            self._stale_leases.pop(0)

    async def close(self) -> None:
        """Stop keeping alive and revoke the lease (its keys vanish now, not after the TTL)."""
        task, self._task = self._task, None
        if task is not None:
            await tasks.cancel_and_wait(task)
        lease_id, self._lease_id = self._lease_id, None
        if lease_id is None:
            return
        try:
            with etcd_kv.translated("revoking the session lease"):
                await asyncio.wait_for(self._client.revoke_lease(lease_id), self._timeout_s)
        except errors.MetadataStoreError as exc:
            log.warning("could not revoke lease %x (its keys expire with its TTL): %s",
                        lease_id, exc)
