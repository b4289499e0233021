"""A small Kubernetes REST client (aiohttp) for the objects the operator owns.

kopf has its own client for watching and patching the custom resources; the
children (StatefulSets, Services, ...) are read and written through this one,
built from the same credentials kopf logs in with (see `connection_info`).
"""

from __future__ import annotations

import base64
import ssl
import tempfile
from collections.abc import Callable
from typing import Any

import aiohttp
import kopf

from pulsar_operator import errors, naming
from pulsar_operator.plan import ObjectRef

REQUEST_TIMEOUT_S = 30.0
#: (apiVersion, kind) -> plural, for every kind the operator reads or writes.
PLURALS: dict[tuple[str, str], str] = {
    ("v1", "ConfigMap"): "configmaps",
    ("v1", "Service"): "services",
    ("v1", "Secret"): "secrets",
    ("v1", "Pod"): "pods",
    ("v1", "PersistentVolumeClaim"): "persistentvolumeclaims",
    ("apps/v1", "StatefulSet"): "statefulsets",
    ("policy/v1", "PodDisruptionBudget"): "poddisruptionbudgets",
    ("autoscaling/v2", "HorizontalPodAutoscaler"): "horizontalpodautoscalers",
    ("coordination.k8s.io/v1", "Lease"): "leases",
    (naming.API_VERSION, "PulsarCluster"): "pulsarclusters",
    (naming.API_VERSION, "Tenant"): "tenants",
    (naming.API_VERSION, "PulsarNamespace"): "pulsarnamespaces",
    (naming.API_VERSION, "Function"): "functions",
    (naming.FUNCTION_MESH_API_VERSION, "Function"): "functions",
}


def collection_path(api_version: str, kind: str, namespace: str) -> str:
    plural = PLURALS[(api_version, kind)]
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{prefix}/namespaces/{namespace}/{plural}"


def object_path(ref: ObjectRef) -> str:
    return f"{collection_path(ref.api_version, ref.kind, ref.namespace)}/{ref.name}"


def _write_temp(data: str | bytes) -> str:
    raw = base64.b64decode(data) if isinstance(data, str) else data
    with tempfile.NamedTemporaryFile(delete=False, suffix=".pem") as handle:
        handle.write(raw)
        return handle.name


def ssl_context(info: kopf.ConnectionInfo) -> ssl.SSLContext | bool:
    if not info.server.startswith("https"):
        return False
    if info.insecure:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        cafile = str(info.ca_path) if info.ca_path else (_write_temp(info.ca_data) if info.ca_data else None)
        ctx = ssl.create_default_context(cafile=cafile)
    cert = info.certificate_path or (_write_temp(info.certificate_data) if info.certificate_data else None)
    key = info.private_key_path or (_write_temp(info.private_key_data) if info.private_key_data else None)
    if cert:
        ctx.load_cert_chain(str(cert), str(key) if key else None)
    return ctx


class KubeClient:
    """GET/POST/PATCH/DELETE of single objects; 404 on read or delete is `None`/`False`."""

    def __init__(
        self, info: kopf.ConnectionInfo, refresh: Callable[[], kopf.ConnectionInfo | None] | None = None
    ) -> None:
        """`refresh` is asked for new credentials once when the server answers 401 (rotated tokens)."""
        self._info = info
        self._refresh = refresh
        self._server = info.server.rstrip("/")
        self._session = aiohttp.ClientSession(
            headers={"Accept": "application/json"}, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
            connector=aiohttp.TCPConnector(ssl=ssl_context(info), limit=32),
        )

    def update_credentials(self, info: kopf.ConnectionInfo) -> None:
        self._info = info

    def _auth(self) -> tuple[dict[str, str], aiohttp.BasicAuth | None]:
        info = self._info
        headers = {"Authorization": f"{info.scheme or 'Bearer'} {info.token}"} if info.token else {}
        auth = aiohttp.BasicAuth(info.username, info.password or "") if info.username else None
        return headers, auth

    async def close(self) -> None:
        await self._session.close()

    async def _request(self, method: str, path: str, body: Any = None, content_type: str | None = None) -> Any:
        status, payload = await self._send(method, path, body, content_type)
        if status == 401 and self._refresh is not None and (fresh := self._refresh()) is not None:
            self._info = fresh
            status, payload = await self._send(method, path, body, content_type)
        if status == 404 and method in ("GET", "DELETE"):
            return None
        if status >= 400:
            raise errors.KubeApiError(method, path, status, str(payload)[:500])
        return payload

    async def _send(self, method: str, path: str, body: Any, content_type: str | None) -> tuple[int, Any]:
        headers, auth = self._auth()
        if content_type:
            headers["Content-Type"] = content_type
        try:
            async with self._session.request(method, self._server + path, json=body, headers=headers,
                                             auth=auth) as resp:
                if resp.status >= 400:
                    return resp.status, await resp.text()
                return resp.status, await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise errors.KubeApiError(method, path, None, repr(exc)) from exc

    async def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        result: dict[str, Any] | None = await self._request("GET", object_path(ref))
        return result

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        ref = ObjectRef.of(obj)
        result: dict[str, Any] = await self._request(
            "POST", collection_path(ref.api_version, ref.kind, ref.namespace), obj)
        return result

    async def patch(self, ref: ObjectRef, patch: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self._request("PATCH", object_path(ref), patch, "application/merge-patch+json")
        return result

    async def delete(self, ref: ObjectRef) -> bool:
        return await self._request("DELETE", object_path(ref)) is not None
