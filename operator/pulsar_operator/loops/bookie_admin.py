"""BookKeeper's bookie HTTP admin API (httpServerPort), as the loops use it (aiohttp adapter).

Per-bookie calls go to that bookie; cluster-wide ones (bookie lists, under-replicated
ledgers, decommission, lostBookieRecoveryDelay, ledger metadata) to the first bookie
that answers. Paths and bodies are BookKeeper's:

    GET  /api/v1/bookie/list_bookies?type=rw|ro          {"<bookie id>": ...}
    GET  /api/v1/bookie/state                            {"readOnly": bool, ...}
    PUT  /api/v1/bookie/state/readonly                   {"readOnly": bool}
    GET  /api/v1/bookie/info                             {"freeSpace": n, "totalSpace": n}
    GET  /api/v1/ledger/list?print_metadata=true         {"<ledger id>": <metadata>}
    GET  /api/v1/autorecovery/list_under_replicated_ledger   404 "No under replicated ledgers found" when none
    PUT  /api/v1/autorecovery/decommission               {"bookie_src": "<bookie id>"}
    GET|PUT /api/v1/autorecovery/lost_bookie_recovery_delay  {"delay_seconds": n}

`forget` is BookKeeper's decommission of a bookie that is down: the bookies re-replicate
whatever still names it (nothing, after a drain) and then delete its cookie.

Every call has a timeout; an answer that cannot be read is None ("unknown"), which the
planners treat as "not safe yet", never as zero.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import aiohttp

from pulsar_operator import errors

REQUEST_TIMEOUT_S = 5.0
NO_UNDER_REPLICATED = "no under replicated"


class BookieAdmin(Protocol):
    """What the loops ask of the bookies; tests and other adapters implement it too."""

    async def registered(self) -> tuple[set[str], set[str]] | None: ...
    async def read_only(self, http_url: str) -> bool | None: ...
    async def set_read_only(self, http_url: str, read_only: bool) -> None: ...
    async def disk(self, http_url: str) -> tuple[int, int] | None: ...
    async def ledgers_by_bookie(self) -> dict[str, int] | None: ...
    async def under_replicated(self) -> int | None: ...
    async def decommission(self, bookie_id: str) -> None: ...
    async def recovery_delay(self) -> int | None: ...
    async def set_recovery_delay(self, seconds: int) -> None: ...
    async def forget(self, bookie_id: str) -> None: ...


def bookies_in(metadata: Any) -> set[str]:
    """Bookie ids named by one ledger's metadata (JSON text or object, every fragment)."""
    if isinstance(metadata, (str, bytes)):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            return set()
    if not isinstance(metadata, dict):
        return set()
    result: set[str] = set()
    for fragment in metadata.get("ensembles") or []:
        if isinstance(fragment, dict):
            result |= {str(b) for b in fragment.get("bookies") or []}
        elif isinstance(fragment, list):
            result |= {str(b) for b in fragment}
    return result


def count_ledgers(ledgers: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for metadata in ledgers.values():
        for bookie in bookies_in(metadata):
            counts[bookie] = counts.get(bookie, 0) + 1
    return counts


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

    async def read_only(self, http_url: str) -> bool | None:
        try:
            status, text = await self._send("GET", http_url.rstrip("/") + "/api/v1/bookie/state")
            state = json.loads(text) if status == 200 else None
        except (errors.AdminApiError, ValueError):
            return None
        return bool(state.get("readOnly")) if isinstance(state, dict) else None

    async def set_read_only(self, http_url: str, read_only: bool) -> None:
        path = "/api/v1/bookie/state/readonly"
        status, text = await self._send("PUT", http_url.rstrip("/") + path, {"readOnly": read_only})
        if status >= 300:
            raise errors.AdminApiError("PUT", path, status, text[:300])

    async def disk(self, http_url: str) -> tuple[int, int] | None:
        try:
            status, text = await self._send("GET", http_url.rstrip("/") + "/api/v1/bookie/info")
            info = json.loads(text) if status == 200 else None
        except (errors.AdminApiError, ValueError):
            return None
        if not isinstance(info, dict) or "totalSpace" not in info or "freeSpace" not in info:
            return None
        total = int(info["totalSpace"])
        return total - int(info["freeSpace"]), total

    async def ledgers_by_bookie(self) -> dict[str, int] | None:
        ledgers = await self._json("/api/v1/ledger/list?print_metadata=true")
        return count_ledgers(ledgers) if isinstance(ledgers, dict) else None

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
        await self.decommission(bookie_id)
