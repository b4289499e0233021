"""etcd's cluster membership API through its v3 JSON gateway (aiohttp adapter).

    POST /v3/cluster/member/list     {}                                   {"members": [...]}
    POST /v3/cluster/member/add      {"peerURLs": [url], "isLearner": true}
    POST /v3/cluster/member/promote  {"ID": id}
    POST /v3/cluster/member/remove   {"ID": id}

Member ids are uint64, sent and received as decimal strings. Every call has a timeout.
"""

from __future__ import annotations

from typing import Any

import aiohttp

from pulsar_operator import errors
from pulsar_operator.loops import etcd_membership

REQUEST_TIMEOUT_S = 5.0


class EtcdAdmin:
    def __init__(self, client_url: str) -> None:
        self.client_url = client_url.rstrip("/")
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S))

    async def close(self) -> None:
        await self._session.close()

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            async with self._session.post(self.client_url + path, json=body) as resp:
                text = await resp.text()
                if resp.status >= 300:
                    raise errors.AdminApiError("POST", path, resp.status, text[:300])
                result = await resp.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            raise errors.AdminApiError("POST", path, None, f"etcd unreachable: {exc!r}") from exc
        return result if isinstance(result, dict) else {}

    async def members(self) -> list[etcd_membership.Member] | None:
        try:
            found = await self._post("/v3/cluster/member/list", {})
        except errors.AdminApiError:
            return None
        return [etcd_membership.Member(str(m.get("ID", "")), str(m.get("name") or ""),
                                       str((m.get("peerURLs") or [""])[0]), bool(m.get("isLearner")))
                for m in found.get("members") or []]

    async def add_learner(self, peer_url: str) -> None:
        await self._post("/v3/cluster/member/add", {"peerURLs": [peer_url], "isLearner": True})

    async def promote(self, member_id: str) -> None:
        await self._post("/v3/cluster/member/promote", {"ID": member_id})

    async def remove(self, member_id: str) -> None:
        await self._post("/v3/cluster/member/remove", {"ID": member_id})
