"""What a reconcile decides: objects to have, objects to remove, admin calls, status.

Reconcilers return a `Plan`; adapters carry it out. Keeping the decision a
plain record is what lets tests check a reconcile without any server.
"""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True)
class ObjectRef:
    """Identifies one Kubernetes object."""

    api_version: str
    kind: str
    namespace: str
    name: str

    @staticmethod
    def of(obj: dict[str, Any]) -> ObjectRef:
        meta = obj.get("metadata", {})
        return ObjectRef(obj["apiVersion"], obj["kind"], meta.get("namespace") or "default", meta["name"])


@dataclasses.dataclass(frozen=True)
class AdminCall:
    """One Pulsar admin REST call; statuses in `ok_statuses` count as success besides 2xx."""

    method: str
    path: str
    body: Any = None
    ok_statuses: tuple[int, ...] = ()
    params: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Plan:
    objects: tuple[dict[str, Any], ...] = ()
    deletions: tuple[ObjectRef, ...] = ()
    admin_calls: tuple[AdminCall, ...] = ()
    status: dict[str, Any] = dataclasses.field(default_factory=dict)
