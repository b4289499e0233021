"""Single active operator replica through a coordination.k8s.io/v1 Lease.

`decide` is the pure rule (take a free or expired lease, renew our own, else
wait); `LeaderElector` reads and writes the Lease. The operator starts kopf
only once it holds the lease and stops when a renewal fails, so two replicas
never reconcile at once (kopf itself runs with peering disabled).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
from typing import Any

from pulsar_operator import errors, kube
from pulsar_operator.plan import ObjectRef


class Decision(enum.Enum):
    ACQUIRE = "acquire"
    RENEW = "renew"
    WAIT = "wait"


@dataclasses.dataclass(frozen=True)
class LeaseRecord:
    holder: str | None
    renew_time: datetime.datetime | None
    duration_s: int
    transitions: int

    @staticmethod
    def of(lease: dict[str, Any] | None) -> LeaseRecord | None:
        if lease is None:
            return None
        spec = lease.get("spec") or {}
        renew = spec.get("renewTime")
        return LeaseRecord(
            holder=spec.get("holderIdentity"),
            renew_time=parse_time(renew) if renew else None,
            duration_s=int(spec.get("leaseDurationSeconds") or 15),
            transitions=int(spec.get("leaseTransitions") or 0),
        )


def parse_time(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text)


def format_time(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def decide(record: LeaseRecord | None, identity: str, now: datetime.datetime) -> Decision:
    if record is None or not record.holder:
        return Decision.ACQUIRE
    if record.holder == identity:
        return Decision.RENEW
    if record.renew_time is None or now - record.renew_time > datetime.timedelta(seconds=record.duration_s):
        return Decision.ACQUIRE
    return Decision.WAIT


class LeaderElector:
    def __init__(
        self, client: kube.KubeClient, namespace: str, name: str, identity: str,
        *, duration_s: int = 15, retry_s: float = 2.0,
    ) -> None:
        self._client = client
        self._ref = ObjectRef("coordination.k8s.io/v1", "Lease", namespace, name)
        self.identity = identity
        self.duration_s = duration_s
        self.retry_s = retry_s

    def _lease(self, now: datetime.datetime, record: LeaseRecord | None, live: dict[str, Any] | None) -> dict[str, Any]:
        taking_over = record is None or record.holder != self.identity
        transitions = (record.transitions if record else 0) + (1 if taking_over and record else 0)
        spec: dict[str, Any] = {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.duration_s,
            "renewTime": format_time(now),
            "leaseTransitions": transitions,
        }
        if taking_over:
            spec["acquireTime"] = format_time(now)
        meta: dict[str, Any] = {"name": self._ref.name, "namespace": self._ref.namespace}
        version = ((live or {}).get("metadata") or {}).get("resourceVersion")
        if version:
            meta["resourceVersion"] = version  # optimistic concurrency: a racing writer gets 409
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                "spec": {**((live or {}).get("spec") or {}), **spec}}

    async def try_once(self) -> bool:
        """One round: True when we hold the lease afterwards."""
        live = await self._client.get(self._ref)
        record = LeaseRecord.of(live)
        now = datetime.datetime.now(datetime.UTC)
        if decide(record, self.identity, now) is Decision.WAIT:
            return False
        lease = self._lease(now, record, live)
        try:
            if live is None:
                await self._client.create(lease)
            else:
                # A merge patch carrying metadata.resourceVersion is a precondition: 409 if it moved.
                await self._client.patch(self._ref, {"metadata": lease["metadata"], "spec": lease["spec"]})
        except errors.KubeApiError as exc:
            if exc.status == 409:
                return False
            raise
        return True

    async def acquire(self) -> None:
        while not await self.try_once():
            await asyncio.sleep(self.retry_s)

    async def hold(self) -> None:
        """Renew until a renewal fails for longer than the lease lasts; then return (leadership lost)."""
        last_ok = asyncio.get_running_loop().time()
        while True:
            await asyncio.sleep(self.duration_s / 3)
            try:
                if await self.try_once():
                    last_ok = asyncio.get_running_loop().time()
                    continue
                return  # somebody else holds it now
            except errors.KubeApiError:
                if asyncio.get_running_loop().time() - last_ok > self.duration_s:
                    return
