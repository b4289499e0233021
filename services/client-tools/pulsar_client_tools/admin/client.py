"""A small blocking HTTP client for the admin REST API (standard library only).

Bodies are JSON, or multipart/form-data (FormPart) where Apache's API takes
files (functions create/update, trigger, putstate). Errors come back as
AdminError carrying the status and the `reason` the broker sent, which is
what pulsar-admin prints.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Sequence
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


@dataclass(frozen=True)
class FormPart:
    """One part of a multipart/form-data body: a field, or a file when filename is set."""

    name: str
    data: bytes
    filename: str | None = None
    content_type: str = "text/plain"


def encode_form(parts: Sequence[FormPart], boundary: str) -> bytes:
    """The multipart/form-data body of parts (RFC 7578), separated by boundary."""
    body = b""
    for part in parts:
        disposition = f'form-data; name="{part.name}"'
        if part.filename is not None:
            disposition += f'; filename="{part.filename}"'
        body += (f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
                 f"Content-Type: {part.content_type}\r\n\r\n").encode() + part.data + b"\r\n"
    return body + f"--{boundary}--\r\n".encode()


def quote(segment: str) -> str:
    """One path segment, encoded the way Apache's admin client encodes topic names."""
    return urllib.parse.quote(segment, safe="")


class AdminClient:
    """headers go with every request (Authorization); ssl_context is used for https:// URLs
    (the CA to trust, a client certificate)."""

    def __init__(self, admin_url: str, timeout_s: float = REQUEST_TIMEOUT_S, *,
                 headers: dict[str, str] | None = None,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.admin_url = admin_url.rstrip("/")
        self.timeout_s = timeout_s
        self.headers = dict(headers or {})
        self.ssl_context = ssl_context

    def request(self, method: str, path: str, body: Any = None,
                query: dict[str, str] | None = None) -> Reply:
        data = None if body is None else json.dumps(body).encode()
        return self._request(method, path, data, "application/json", query)

    def send_form(self, method: str, path: str, parts: Sequence[FormPart]) -> Reply:
        """A multipart/form-data request, as Apache's client sends files."""
        boundary = f"pulsar-admin-{uuid.uuid4().hex}"
        return self._request(method, path, encode_form(parts, boundary),
                             f"multipart/form-data; boundary={boundary}", None)

    def _request(self, method: str, path: str, data: bytes | None, content_type: str,
                 query: dict[str, str] | None) -> Reply:
        url = self.admin_url + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        for _ in range(MAX_REDIRECTS + 1):
            try:
                return self._send(method, url, data, content_type)
            except urllib.error.HTTPError as exc:
                location = exc.headers.get("Location")
                if exc.code not in (307, 308) or not location:
                    raise AdminError(exc.code, _reason(exc.code, exc.read(), exc.reason)) from exc
                # Another broker serves the topic or bundle: same request, there.
                url = urllib.parse.urljoin(url, location)
        raise AdminError(CONNECT_FAILED, f"More than {MAX_REDIRECTS} redirects, last to {url}")

    def _send(self, method: str, url: str, data: bytes | None, content_type: str) -> Reply:
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        req.add_header("Accept", "application/json")
        for name, value in self.headers.items():
            req.add_header(name, value)
        context = self.ssl_context if url.startswith("https:") else None
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s, context=context) as response:
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
