"""Fixtures for schema tests: their own standalone (the shared `client` connects to it)
and namespaces with chosen strategies.

The tests create namespaces; they get a standalone of their own so that the
namespaces they leave behind (and own) do not change what other tests of the
session see on the shared one.
"""

from __future__ import annotations

import json
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pulsar_broker import testing as broker_testing


@pytest.fixture(scope="package")
def standalone(tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[broker_testing.StandaloneProcess]:
    data_dir = tmp_path_factory.mktemp("schema-standalone") / "data"
    process = broker_testing.StandaloneProcess(data_dir, {"journalSyncData": "false"})
    process.start()
    yield process
    process.stop()



Rest = Callable[..., tuple[int, Any]]


@pytest.fixture
def rest(standalone: broker_testing.StandaloneProcess) -> Rest:
    """rest(method, path, body=None) -> (status, decoded JSON or None)."""

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(standalone.web_url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                raw = reply.read()
                return reply.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw else None

    return call


@pytest.fixture
def namespace(rest: Rest) -> Callable[[str | None], str]:
    """namespace(strategy) -> "public/<new ns>" with that schema compatibility strategy."""

    def create(strategy: str | None = None) -> str:
        ns = f"public/schema-{uuid.uuid4().hex[:10]}"
        status, _ = rest("PUT", f"/admin/v2/namespaces/{ns}")
        assert status == 204
        if strategy is not None:
            status, _ = rest("PUT", f"/admin/v2/namespaces/{ns}/schemaCompatibilityStrategy",
                             strategy)
            assert status == 204
        return ns

    return create
