"""Shared fixtures for the operator tests: sample manifests as custom resources."""

from __future__ import annotations

import copy
import pathlib
from collections.abc import Callable
from typing import Any

import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CRDS = REPO / "crds"
K8S_VERSION = "1.37.0"


def _load(name: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    body["metadata"].update(namespace="pulsar", uid=f"uid-{body['metadata']['name']}", generation=1)
    return body


@pytest.fixture
def example() -> Callable[[str], dict[str, Any]]:
    """A sample manifest from examples/, as the API server would hand it over."""
    return lambda name: copy.deepcopy(_load(name))


@pytest.fixture
def crd_documents() -> list[dict[str, Any]]:
    docs = []
    for path in sorted(CRDS.glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


class RecordingAdminServer:
    """A small real HTTP server speaking the Pulsar admin v2 paths the operator uses.

    It stands in for a broker's admin API (until `pulsar standalone` can serve
    it in these tests): it keeps tenants and namespace policies in memory with
    Apache's field names, and records every request for assertions.
    """

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, Any]] = []
        self.tenants: dict[str, dict[str, Any]] = {}
        self.namespaces: dict[str, dict[str, Any]] = {}
        self.fail_with: int | None = None
        self.url = ""
        self._runner: Any = None

    async def start(self) -> None:
        from aiohttp import web

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        await self._runner.cleanup()

    def calls(self, method: str | None = None) -> list[tuple[str, str, Any]]:
        return [r for r in self.requests if method is None or r[0] == method]

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        body = await request.json() if request.can_read_body else None
        path = request.path + (f"?{request.query_string}" if request.query_string else "")
        self.requests.append((request.method, path, body))
        if self.fail_with:
            return web.json_response({"reason": "injected failure"}, status=self.fail_with)
        status, payload = self._apply(request.method, request.path.split("/")[3:], body, dict(request.query))
        return web.json_response(payload, status=status)

    def _apply(self, method: str, parts: list[str], body: Any, query: dict[str, str]) -> tuple[int, Any]:
        if parts[:1] == ["clusters"]:
            return 204, None
        if parts[:1] == ["tenants"] and len(parts) == 2:
            return self._tenant(method, parts[1], body)
        if parts[:1] == ["namespaces"] and len(parts) >= 3:
            return self._namespace(method, f"{parts[1]}/{parts[2]}", parts[3:], body, query)
        return 404, {"reason": "unknown path"}

    def _tenant(self, method: str, name: str, body: Any) -> tuple[int, Any]:
        if method == "GET":
            return (200, self.tenants[name]) if name in self.tenants else (404, {"reason": "Tenant does not exist"})
        if method == "PUT":
            if name in self.tenants:
                return 409, {"reason": "Tenant already exists"}
            self.tenants[name] = body
            return 204, None
        if method == "POST":
            self.tenants[name] = body
            return 204, None
        if method == "DELETE":
            return (204, None) if self.tenants.pop(name, None) is not None else (404, {"reason": "Tenant does not exist"})
        return 405, None

    def _namespace(self, method: str, name: str, rest: list[str], body: Any,
                   query: dict[str, str]) -> tuple[int, Any]:
        policies = self.namespaces.get(name)
        if not rest:
            if method == "GET":
                return (200, policies) if policies is not None else (404, {"reason": "Namespace does not exist"})
            if method == "PUT":
                if policies is not None:
                    return 409, {"reason": "Namespace already exists"}
                if name.split("/")[0] not in self.tenants:
                    return 404, {"reason": "Tenant does not exist"}
                bundles = (body or {}).get("bundles") or {"numBundles": 4}
                self.namespaces[name] = {"bundles": bundles}
                return 204, None
            if method == "DELETE":
                return (204, None) if self.namespaces.pop(name, None) is not None else (404, None)
        if policies is None:
            return 404, {"reason": "Namespace does not exist"}
        key = {"retention": "retention_policies", "messageTTL": "message_ttl_in_seconds",
               "deduplication": "deduplicationEnabled", "persistence": "persistence"}.get(rest[0])
        if method == "POST" and key:
            policies[key] = body
            return 204, None
        if method == "POST" and rest[0] == "backlogQuota":
            policies.setdefault("backlog_quota_map", {})[query.get("backlogQuotaType", "destination_storage")] = body
            return 204, None
        return 404, None


@pytest.fixture
async def admin_server() -> Any:
    server = RecordingAdminServer()
    await server.start()
    yield server
    await server.stop()
