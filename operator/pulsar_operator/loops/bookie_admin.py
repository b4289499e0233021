"""BookKeeper's bookie HTTP admin API (httpServerPort), as the loops use it (aiohttp adapter).

Per-bookie calls go to that bookie; cluster-wide ones (bookie lists, under-replicated
ledgers, decommission, lostBookieRecoveryDelay, ledger metadata) to the first bookie
that answers. Paths and bodies are BookKeeper's:

    GET    /api/v1/bookie/list_bookies?type=rw|ro              {"<bookie id>": ...}
    GET    /api/v1/bookie/state                                {"readOnly": bool, "diskUsage": 0..1, ...}
    PUT    /api/v1/bookie/state/readonly                       {"readOnly": bool}
    GET    /api/v1/autorecovery/list_under_replicated_ledger   404 "No under replicated ledgers found"
    GET|PUT /api/v1/autorecovery/lost_bookie_recovery_delay    {"delay_seconds": n}
    PUT    /api/v1/autorecovery/decommission                   {"bookie_src": id}: drain it
    GET    /api/v1/autorecovery/decommission?bookie_src=id     {"ledgers": n, "underReplicatedLedgers": n, ...}
    DELETE /api/v1/autorecovery/decommission?bookie_src=id     forget a stopped, drained bookie (its cookie)

The last three are pulsar-py's bookies' (docs/bookie.md): BookKeeper's decommission as
steps a controller can drive and watch.

Every call has a timeout; an answer that cannot be read is None ("unknown"), which the
planners treat as "not safe yet", never as zero.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol
from urllib.parse import quote

import aiohttp

from pulsar_operator import errors

REQUEST_TIMEOUT_S = 5.0
NO_UNDER_REPLICATED = "no under replicated"


class BookieAdmin(Protocol):
    """What the loops ask of the bookies; tests and other adapters implement it too."""

    async def registered(self) -> tuple[set[str], set[str]] | None: ...
    async def state(self, http_url: str) -> dict[str, Any] | None: ...
    async def set_read_only(self, http_url: str, read_only: bool) -> None: ...
    async def ledgers_on(self, bookie_id: str) -> int | None: ...
    async def under_replicated(self) -> int | None: ...
    async def decommission(self, bookie_id: str) -> None: ...
    async def recovery_delay(self) -> int | None: ...
    async def set_recovery_delay(self, seconds: int) -> None: ...
    async def forget(self, bookie_id: str) -> None: ...


def parse_delay(text: str) -> int | None:
    """BookKeeper answers `lostBookieRecoveryDelay value: N` (or JSON with the number)."""
    match = re.search(r"(-?\d+)", text)
    return int(match.group(1)) if match else None


class HttpBookieAdmin:
    """BookieAdmin over HTTP, for the bookies at `http_urls` (tried in order for cluster-wide calls)."""

    def __init__(self, http_urls: Sequence[str], session: aiohttp.ClientSession | None = None) -> None:
        self.http_urls = [u.rstrip("/") for u in http_urls]
        self._own = session is None
        self._session = session or aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S))

    async def close(self) -> None:
        if self._own:
            await self._session.close()

    async def _send(self, method: str, url: str, body: Any = None) -> tuple[int, str]:
        try:
            async with self._session.request(method, url, json=body,
                                             timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S)) as resp:
                return resp.status, await resp.text()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise errors.AdminApiError(method, url, None, f"bookie admin unreachable: {exc!r}") from exc

    async def _any(self, method: str, path: str, body: Any = None,
                   urls: Iterable[str] | None = None) -> tuple[int, str]:
        failure: errors.AdminApiError | None = None
        for url in urls or self.http_urls:
            try:
                status, text = await self._send(method, url + path, body)
            except errors.AdminApiError as exc:
                failure = exc
                continue
            if status < 500:
                return status, text
            failure = errors.AdminApiError(method, path, status, text[:300])
        raise failure or errors.AdminApiError(method, path, None, "no bookie to ask")

    async def _json(self, path: str) -> Any:
        try:
            status, text = await self._any("GET", path)
        except errors.AdminApiError:
            return None
        if status != 200:
            return None
        try:
            return json.loads(text) if text else None
        except ValueError:
            return None

    async def registered(self) -> tuple[set[str], set[str]] | None:
        writable = await self._json("/api/v1/bookie/list_bookies?type=rw&print_hostnames=false")
        read_only = await self._json("/api/v1/bookie/list_bookies?type=ro&print_hostnames=false")
        if not isinstance(writable, dict) or not isinstance(read_only, dict):
            return None
        return set(writable), set(read_only)

    async def state(self, http_url: str) -> dict[str, Any] | None:
        try:
            status, text = await self._send("GET", http_url.rstrip("/") + "/api/v1/bookie/state")
            state = json.loads(text) if status == 200 else None
        except (errors.AdminApiError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    async def set_read_only(self, http_url: str, read_only: bool) -> None:
        path = "/api/v1/bookie/state/readonly"
        status, text = await self._send("PUT", http_url.rstrip("/") + path, {"readOnly": read_only})
        if status >= 300:
            raise errors.AdminApiError("PUT", path, status, text[:300])

    async def ledgers_on(self, bookie_id: str) -> int | None:
        """Ledgers whose metadata still names the bookie (its decommission status)."""
        found = await self._json(f"/api/v1/autorecovery/decommission?bookie_src={quote(bookie_id)}")
        ledgers = found.get("ledgers") if isinstance(found, dict) else None
        return int(ledgers) if isinstance(ledgers, int) else None

    async def under_replicated(self) -> int | None:
        try:
            status, text = await self._any("GET", "/api/v1/autorecovery/list_under_replicated_ledger")
        except errors.AdminApiError:
            return None
        if status == 404 and NO_UNDER_REPLICATED in text.lower():
            return 0
        if status != 200:
            return None
        try:
            listed = json.loads(text)
        except ValueError:
            return None
        return len(listed) if isinstance(listed, (dict, list)) else None

    async def _put(self, path: str, body: Any, ok: tuple[int, ...] = ()) -> None:
        status, text = await self._any("PUT", path, body)
        if status >= 300 and status not in ok:
            raise errors.AdminApiError("PUT", path, status, text[:300])

    async def decommission(self, bookie_id: str) -> None:
        await self._put("/api/v1/autorecovery/decommission", {"bookie_src": bookie_id})

    async def recovery_delay(self) -> int | None:
        try:
            status, text = await self._any("GET", "/api/v1/autorecovery/lost_bookie_recovery_delay")
        except errors.AdminApiError:
            return None
        return parse_delay(text) if status == 200 else None

    async def set_recovery_delay(self, seconds: int) -> None:
        await self._put("/api/v1/autorecovery/lost_bookie_recovery_delay", {"delay_seconds": seconds})

    async def forget(self, bookie_id: str) -> None:
        """Remove the cookie of a stopped bookie nothing needs (refused, 409, while it is registered
        or named by a ledger: then the step is tried again later)."""
        path = f"/api/v1/autorecovery/decommission?bookie_src={quote(bookie_id)}"
        status, text = await self._any("DELETE", path)
        if status >= 300:
            raise errors.AdminApiError("DELETE", path, status, text[:300])
