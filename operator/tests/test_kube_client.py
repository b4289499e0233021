"""The Kubernetes REST adapter: paths, 404 semantics, errors, and new credentials on 401."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import kopf
import pytest
import pytest_asyncio
from aiohttp import web
from pulsar_operator import errors, kube, naming
from pulsar_operator.plan import ObjectRef

STS = ObjectRef("apps/v1", "StatefulSet", "ns", "c-broker")


@pytest.mark.parametrize(("ref", "path"), [
    (STS, "/apis/apps/v1/namespaces/ns/statefulsets/c-broker"),
    (ObjectRef("v1", "ConfigMap", "ns", "c"), "/api/v1/namespaces/ns/configmaps/c"),
    (ObjectRef(naming.API_VERSION, "PulsarCluster", "ns", "c"),
     "/apis/pulsar.pulsar-py.dev/v1alpha1/namespaces/ns/pulsarclusters/c"),
    (ObjectRef(naming.FUNCTION_MESH_API_VERSION, "Function", "ns", "f"),
     "/apis/compute.functionmesh.io/v1alpha1/namespaces/ns/functions/f"),
])
def test_object_paths(ref: ObjectRef, path: str) -> None:
    assert kube.object_path(ref) == path


@pytest_asyncio.fixture
async def server() -> AsyncIterator[tuple[str, list[tuple[str, str, str]]]]:
    """An API server accepting only the token 'fresh'; records (method, path, token)."""
    seen: list[tuple[str, str, str]] = []

    async def handle(request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "")
        seen.append((request.method, request.path, token))
        if token != "Bearer fresh":
            return web.json_response({"reason": "Unauthorized"}, status=401)
        if request.path.endswith("/missing"):
            return web.json_response({"reason": "NotFound"}, status=404)
        if request.path.endswith("/broken"):
            return web.json_response({"reason": "Invalid"}, status=422)
        return web.json_response({"metadata": {"name": request.path.rsplit("/", 1)[-1]}})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", seen
    await runner.cleanup()


async def test_a_401_asks_for_new_credentials_once_and_retries(server: Any) -> None:
    url, seen = server
    client = kube.KubeClient(kopf.ConnectionInfo(server=url, token="expired"),
                             refresh=lambda: kopf.ConnectionInfo(server=url, token="fresh"))
    try:
        assert await client.get(STS) == {"metadata": {"name": "c-broker"}}
        assert [t for _, _, t in seen] == ["Bearer expired", "Bearer fresh"]
        assert await client.get(STS) is not None and seen[-1][2] == "Bearer fresh"
    finally:
        await client.close()


async def test_without_refresh_a_401_is_an_error(server: Any) -> None:
    url, _ = server
    client = kube.KubeClient(kopf.ConnectionInfo(server=url, token="expired"))
    try:
        with pytest.raises(errors.KubeApiError) as caught:
            await client.get(STS)
        assert caught.value.status == 401 and not caught.value.retriable
    finally:
        await client.close()


async def test_404_reads_as_absent_and_other_errors_raise(server: Any) -> None:
    url, _ = server
    client = kube.KubeClient(kopf.ConnectionInfo(server=url, token="fresh"))
    try:
        assert await client.get(ObjectRef("v1", "ConfigMap", "ns", "missing")) is None
        assert await client.delete(ObjectRef("v1", "ConfigMap", "ns", "missing")) is False
        with pytest.raises(errors.KubeApiError) as caught:
            await client.patch(ObjectRef("v1", "ConfigMap", "ns", "broken"), {"data": {}})
        assert caught.value.status == 422
    finally:
        await client.close()
