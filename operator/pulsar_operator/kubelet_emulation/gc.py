"""The garbage collector: objects whose owners are all gone are deleted (background cascade).

The emulator has none, so `kubectl delete pulsarcluster` would leave every
child behind. As in kube-controller-manager, an object goes when none of its
ownerReferences names a live object (same uid). Owners are known from the
harness's caches; before deleting, each owner is read once more from the
API server, so an owner created a moment ago and not yet seen by a watch
never costs its children. Owners of kinds nobody watches count as alive.
"""

from __future__ import annotations

import logging
from typing import Any

from pulsar_operator.kubelet_emulation import api

log = logging.getLogger(__name__)


class GarbageCollector:
    def __init__(self, client: api.ApiClient, informers: dict[api.Resource, api.Informer]) -> None:
        self.api = client
        self.informers = informers
        self._kinds = {(r.api_version, r.kind): r for r in informers}

    def _live_uids(self) -> set[str]:
        return {str(o["metadata"].get("uid")) for inf in self.informers.values() for o in inf.items()}

    async def _owner_alive(self, namespace: str, ref: dict[str, Any], live: set[str]) -> bool:
        resource = self._kinds.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
        if resource is None or str(ref.get("uid")) in live:
            return True
        owner = await self.api.get(resource, namespace, str(ref.get("name")))
        return owner is not None and (owner.get("metadata") or {}).get("uid") == ref.get("uid")

    async def collect(self) -> None:
        live = self._live_uids()
        for resource, informer in self.informers.items():
            for obj in informer.items():
                meta = obj.get("metadata") or {}
                refs = meta.get("ownerReferences") or []
                if not refs or meta.get("deletionTimestamp"):
                    continue
                namespace = str(meta.get("namespace") or "")
                alive = [await self._owner_alive(namespace, ref, live) for ref in refs]
                if not any(alive):
                    log.info("garbage-collecting %s %s/%s", resource.kind, namespace, meta.get("name"))
                    if await self.api.delete(resource, namespace, str(meta.get("name"))):
                        informer.remove(obj)
