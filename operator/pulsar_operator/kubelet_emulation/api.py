"""The harness's view of the API server: a small REST client and list+watch caches.

Controllers in Kubernetes read through informers (a cache kept by list then
watch) and write through the API; the harness does the same. Every write
also goes into the cache at once (write-through), so the next sync does not
act on a stale copy before the watch event arrives. A cache relists every
`RELIST_S` seconds: a watch may miss events (the emulator streams a watch's
initial objects before it subscribes to changes), and a relist bounds that.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp

log = logging.getLogger(__name__)
REQUEST_TIMEOUT_S = 30.0
RELIST_S = 15.0
#: Pause before a broken watch is opened again.
WATCH_RETRY_S = 0.5
MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}

Key = tuple[str, str]  # (namespace, name)


@dataclasses.dataclass(frozen=True)
class Resource:
    """One API collection, e.g. Resource("apps/v1", "statefulsets", "StatefulSet")."""

    api_version: str
    plural: str
    kind: str

    def collection(self, namespace: str | None = None) -> str:
        prefix = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        return f"{prefix}/namespaces/{namespace}/{self.plural}" if namespace else f"{prefix}/{self.plural}"

    def path(self, namespace: str, name: str, subresource: str | None = None) -> str:
        path = f"{self.collection(namespace)}/{name}"
        return f"{path}/{subresource}" if subresource else path


PODS = Resource("v1", "pods", "Pod")
SERVICES = Resource("v1", "services", "Service")
CONFIG_MAPS = Resource("v1", "configmaps", "ConfigMap")
SECRETS = Resource("v1", "secrets", "Secret")
CLAIMS = Resource("v1", "persistentvolumeclaims", "PersistentVolumeClaim")
STATEFUL_SETS = Resource("apps/v1", "statefulsets", "StatefulSet")
DISRUPTION_BUDGETS = Resource("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget")
AUTOSCALERS = Resource("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
BUILT_IN = (PODS, SERVICES, CONFIG_MAPS, SECRETS, CLAIMS, STATEFUL_SETS, DISRUPTION_BUDGETS, AUTOSCALERS)


def key_of(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _version(obj: dict[str, Any] | None) -> int | None:
    value = str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")
    return int(value) if value.isdigit() else None


class ApiClient:
    """get/list/create/patch/delete/watch against one API server, without credentials."""

    def __init__(self, server: str) -> None:
        self.server = server.rstrip("/")
        self._session: aiohttp.ClientSession | None = None

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def list(self, resource: Resource) -> tuple[list[dict[str, Any]], str]:
        async with self.session.get(self.server + resource.collection()) as resp:
            resp.raise_for_status()
            body = await resp.json()
        return list(body.get("items") or []), str((body.get("metadata") or {}).get("resourceVersion") or "")

    async def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None:
        async with self.session.get(self.server + resource.path(namespace, name)) as resp:
            if resp.status == 404:
                return None
            resp.raise_for_status()
            result: dict[str, Any] = await resp.json()
            return result

    async def create(self, resource: Resource, body: dict[str, Any]) -> dict[str, Any] | None:
        """The stored object, or None when one of that name exists already (409)."""
        namespace = (body.get("metadata") or {}).get("namespace") or "default"
        async with self.session.post(self.server + resource.collection(namespace), json=body) as resp:
            if resp.status == 409:
                return None
            resp.raise_for_status()
            result: dict[str, Any] = await resp.json()
            return result

    async def patch(self, resource: Resource, namespace: str, name: str, patch: dict[str, Any],
                    subresource: str | None = None) -> dict[str, Any] | None:
        """Merge patch; None when the object is gone (404)."""
        async with self.session.patch(self.server + resource.path(namespace, name, subresource),
                                      json=patch, headers=MERGE_PATCH) as resp:
            if resp.status == 404:
                return None
            resp.raise_for_status()
            result: dict[str, Any] = await resp.json()
            return result

    async def delete(self, resource: Resource, namespace: str, name: str) -> bool:
        """True when this call deleted it, False when it was gone already."""
        async with self.session.delete(self.server + resource.path(namespace, name)) as resp:
            if resp.status == 404:
                return False
            resp.raise_for_status()
            return True

    async def watch(self, resource: Resource, since: str) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(type, object) events newer than resourceVersion `since`, until the stream ends."""
        url = f"{self.server}{resource.collection()}?watch=true&resourceVersion={since}"
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=REQUEST_TIMEOUT_S)
        async with self.session.get(url, timeout=timeout) as resp:
            resp.raise_for_status()
            async for line in resp.content:
                if line.strip():
                    event = json.loads(line)
                    if isinstance(event, dict) and isinstance(event.get("object"), dict):
                        yield str(event.get("type")), event["object"]


class Informer:
    """A cache of one resource, kept by list then watch; calls `on_change` after each change."""

    def __init__(self, api: ApiClient, resource: Resource, on_change: Callable[[], None]) -> None:
        self.api = api
        self.resource = resource
        self.on_change = on_change
        self.objects: dict[Key, dict[str, Any]] = {}
        self.synced = asyncio.Event()

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.objects.get((namespace, name))

    def items(self) -> list[dict[str, Any]]:
        return list(self.objects.values())

    def upsert(self, obj: dict[str, Any]) -> None:
        """Keep `obj` unless the cache holds a newer version of it."""
        key = key_of(obj)
        old, new = _version(self.objects.get(key)), _version(obj)
        if old is not None and new is not None and new < old:
            return
        self.objects[key] = obj
        self.on_change()

    def remove(self, obj: dict[str, Any]) -> None:
        """Forget `obj` unless the cache holds a newer object of that name (created again)."""
        key = key_of(obj)
        old, gone = _version(self.objects.get(key)), _version(obj)
        if old is not None and gone is not None and old > gone:
            return
        if self.objects.pop(key, None) is not None:
            self.on_change()

    async def run(self) -> None:
        while True:
            try:
                items, version = await self.api.list(self.resource)
                self.objects = {key_of(obj): obj for obj in items}
                self.synced.set()
                self.on_change()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(RELIST_S):
                        async for kind, obj in self.api.watch(self.resource, version):
                            if kind == "DELETED":
                                self.remove(obj)
                            elif kind in ("ADDED", "MODIFIED"):
                                self.upsert(obj)
            except (aiohttp.ClientError, OSError, ValueError) as exc:
                log.debug("watch of %s broke: %s", self.resource.plural, exc)
                await asyncio.sleep(WATCH_RETRY_S)
