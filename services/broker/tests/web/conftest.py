"""Fixtures for the HTTP tests: plain HTTP against the session's real `pulsar standalone`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from pulsar_broker import testing as broker_testing


@dataclass(frozen=True)
class HttpReply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    @property
    def reason(self) -> str:
        return str(self.json()["reason"])


class Http:
    """Raw HTTP calls, so tests see the exact status, headers and JSON the broker sends."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None) -> HttpReply:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        request = urllib.request.Request(self.base_url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return HttpReply(response.status, dict(response.headers.items()), response.read())
        except urllib.error.HTTPError as exc:
            return HttpReply(exc.code, dict(exc.headers.items()), exc.read())

    def get(self, path: str) -> HttpReply:
        return self.call("GET", path)

    def put(self, path: str, body: Any = None) -> HttpReply:
        return self.call("PUT", path, body)

    def post(self, path: str, body: Any = None) -> HttpReply:
        return self.call("POST", path, body)

    def delete(self, path: str) -> HttpReply:
        return self.call("DELETE", path)


@pytest.fixture
def http(standalone: broker_testing.StandaloneProcess) -> Http:
    return Http(standalone.web_url)


@pytest.fixture
def unique() -> str:
    return uuid.uuid4().hex[:10]

