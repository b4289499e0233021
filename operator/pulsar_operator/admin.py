"""Pulsar admin REST v2 adapter (aiohttp): runs AdminCalls, reads tenants and policies.

Every call has a timeout; connection failures and error statuses become
AdminApiError with a `retriable` flag. 404 on a read means "absent" (None).
"""

from __future__ import annotations

import json
from typing import Any, Self

import aiohttp

from pulsar_operator import errors
from pulsar_operator.plan import AdminCall

REQUEST_TIMEOUT_S = 10.0


class AdminClient:
    def __init__(self, web_service_url: str, session: aiohttp.ClientSession | None = None) -> None:
        self.web_service_url = web_service_url.rstrip("/")
        self._own_session = session is None
        self._session = session or aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._own_session:
            await self._session.close()

    async def _send(self, method: str, path: str, body: Any, params: tuple[tuple[str, str], ...]) -> tuple[int, str]:
        url = self.web_service_url + path
        kwargs: dict[str, Any] = {"params": list(params)} if params else {}
        if body is not None:
            kwargs["json"] = body
        try:
            async with self._session.request(method, url, timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
                                             **kwargs) as resp:
                return resp.status, await resp.text()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise errors.AdminApiError(method, path, None, f"cannot reach {self.web_service_url}: {exc!r}") from exc

    async def call(self, call: AdminCall) -> None:
        status, text = await self._send(call.method, call.path, call.body, call.params)
        if status >= 300 and status not in call.ok_statuses:
            raise errors.AdminApiError(call.method, call.path, status, text[:300])

    async def run(self, calls: list[AdminCall] | tuple[AdminCall, ...]) -> None:
        """In order: later calls (policies) need earlier ones (the namespace) to exist."""
        for call in calls:
            await self.call(call)

    async def get(self, path: str) -> Any:
        status, text = await self._send("GET", path, None, ())
        if status == 404:
            return None
        if status >= 300:
            raise errors.AdminApiError("GET", path, status, text[:300])
        return json.loads(text) if text else {}
