"""A small blocking HTTP client for the admin REST API (standard library only).

Errors come back as AdminError carrying the status and the `reason` the
broker sent, which is what pulsar-admin prints.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

#: How long one admin call may take before the command fails.
REQUEST_TIMEOUT_S = 60.0


#: Redirects to the broker that serves a topic followed before giving up.
MAX_REDIRECTS = 5

#: AdminError.status when no HTTP answer came back at all.
CONNECT_FAILED = 0


class AdminError(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def quote(segment: str) -> str:
    """One path segment, encoded the way Apache's admin client encodes topic names."""
    return urllib.parse.quote(segment, safe="")


class AdminClient:
    def __init__(self, admin_url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.admin_url = admin_url.rstrip("/")
        self.timeout_s = timeout_s

    def request(self, method: str, path: str, body: Any = None,
                query: dict[str, str] | None = None) -> Reply:
        url = self.admin_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body).encode()
        for _ in range(MAX_REDIRECTS + 1):
            try:
                return self._send(method, url, data)
            except urllib.error.HTTPError as exc:
                location = exc.headers.get("Location")
                if exc.code not in (307, 308) or not location:
                    raise AdminError(exc.code, _reason(exc.code, exc.read(), exc.reason)) from exc
                # Another broker serves the topic or bundle: same request, there.
                url = urllib.parse.urljoin(url, location)
        raise AdminError(CONNECT_FAILED, f"More than {MAX_REDIRECTS} redirects, last to {url}")

    def _send(self, method: str, url: str, data: bytes | None) -> Reply:
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        req.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as response:
                return Reply(response.status, dict(response.headers.items()), response.read())
        except urllib.error.HTTPError:
            raise
        except urllib.error.URLError as exc:
            raise AdminError(CONNECT_FAILED, f"Connection failed: {exc.reason}") from exc
        except (TimeoutError, ConnectionError) as exc:
            raise AdminError(CONNECT_FAILED, f"Connection failed: {exc}") from exc

    def get(self, path: str, query: dict[str, str] | None = None) -> Any:
        return self.request("GET", path, query=query).json()

    def put(self, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        return self.request("PUT", path, body, query).json()

    def post(self, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        return self.request("POST", path, body, query).json()

    def delete(self, path: str, query: dict[str, str] | None = None) -> Any:
        return self.request("DELETE", path, query=query).json()


def _reason(status: int, body: bytes, fallback: Any) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("reason"):
        return str(parsed["reason"])
    text = body.decode(errors="replace").strip()
    return text or f"HTTP {status} {fallback}"
