"""A seeded simulation of the ledger protocol: bookies, network and metadata in memory.

The replicated ledger client runs unchanged against these implementations of
its ports (BookieRpcPool, BookieSource, MetadataStore). A seeded PRNG decides
message delays (which reorders them), lost requests, lost replies (the bookie
acted but the client never hears), and bookie crashes (unreachable for a while;
what a bookie acknowledged stays durable, as its journal guarantees).
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import AsyncIterator

from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_bookie import errors, types
from pulsar_bookie.client.replicated import placement
from pulsar_bookie.storage import api as storage_api


@dataclasses.dataclass
class Faults:
    drop_request: float = 0.03
    drop_reply: float = 0.03
    max_delay_s: float = 0.02
    crash: float = 0.01
    crash_duration_s: float = 0.5


class SimBookie:
    """One bookie's durable state and its up/down status."""

    def __init__(self, bookie_id: types.BookieId) -> None:
        self.bookie_id = bookie_id
        self.entries: dict[tuple[int, int], storage_api.StoredEntry] = {}
        self.fenced: set[int] = set()
        self.lac: dict[int, int] = {}
        self.down_until = 0.0

    def up(self, now: float) -> bool:
        return now >= self.down_until


class SimNetwork:
    def __init__(self, rng: random.Random, bookies: list[SimBookie], faults: Faults) -> None:
        self.rng = rng
        self.bookies = {b.bookie_id: b for b in bookies}
        self.faults = faults
        self.enabled = True

    async def call(self, bookie_id: types.BookieId, action: str, *args: object) -> object:
        loop = asyncio.get_running_loop()
        bookie = self.bookies[bookie_id]
        faults = self.faults if self.enabled else Faults(0, 0, 0, 0, 0)
        await asyncio.sleep(self.rng.uniform(0, faults.max_delay_s))
        if self.rng.random() < faults.crash:
            bookie.down_until = loop.time() + faults.crash_duration_s
        if not bookie.up(loop.time()) or self.rng.random() < faults.drop_request:
            await asyncio.sleep(self.rng.uniform(0, faults.max_delay_s))
            raise errors.BookieUnavailableError(f"{bookie_id} unreachable")
        result = getattr(self, "_" + action)(bookie, *args)
        await asyncio.sleep(self.rng.uniform(0, faults.max_delay_s))
        if self.rng.random() < faults.drop_reply:
            raise errors.BookieUnavailableError(f"reply from {bookie_id} lost")
        return result

    # What a bookie does with each request.

    @staticmethod
    def _add(bookie: SimBookie, ledger: int, entry: int, lac: int, payload: bytes,
             recovery: bool) -> None:
        if ledger in bookie.fenced and not recovery:
            raise errors.LedgerFencedError(f"ledger {ledger} fenced")
        bookie.entries[(ledger, entry)] = storage_api.StoredEntry(
            types.LedgerId(ledger), types.EntryId(entry), types.EntryId(lac), payload)
        bookie.lac[ledger] = max(bookie.lac.get(ledger, -1), lac)

    @staticmethod
    def _read(bookie: SimBookie, ledger: int, entry: int, fence: bool) -> storage_api.StoredEntry:
        if fence:
            bookie.fenced.add(ledger)
        found = bookie.entries.get((ledger, entry))
        if found is None:
            raise errors.NoSuchEntryError(f"{bookie.bookie_id} has no {ledger}:{entry}")
        return found

    @staticmethod
    def _lac(bookie: SimBookie, ledger: int) -> int:
        return bookie.lac.get(ledger, -1)

    @staticmethod
    def _fence(bookie: SimBookie, ledger: int) -> int:
        bookie.fenced.add(ledger)
        return bookie.lac.get(ledger, -1)


class SimRpc:
    def __init__(self, network: SimNetwork, bookie_id: types.BookieId) -> None:
        self._network = network
        self._bookie_id = bookie_id

    @property
    def bookie_id(self) -> types.BookieId:
        return self._bookie_id

    async def add_entry(self, ledger_id: types.LedgerId, entry_id: types.EntryId,
                        last_add_confirmed: types.EntryId, payload: bytes, master_key: bytes,
                        *, recovery: bool = False) -> None:
        await self._network.call(self._bookie_id, "add", ledger_id, entry_id,
                                 last_add_confirmed, payload, recovery)

    def add_entry_future(self, ledger_id: types.LedgerId, entry_id: types.EntryId,
                         last_add_confirmed: types.EntryId, payload: bytes, master_key: bytes,
                         timeout_s: float) -> asyncio.Future[None]:
        return asyncio.ensure_future(asyncio.wait_for(
            self.add_entry(ledger_id, entry_id, last_add_confirmed, payload, master_key),
            timeout_s))

    async def read_entry(self, ledger_id: types.LedgerId, entry_id: types.EntryId, *,
                         fence: bool = False, master_key: bytes = b"") -> storage_api.StoredEntry:
        result = await self._network.call(self._bookie_id, "read", ledger_id, entry_id, fence)
        assert isinstance(result, storage_api.StoredEntry)
        return result

    def read_entry_future(self, ledger_id: types.LedgerId, entry_id: types.EntryId,
                          timeout_s: float) -> asyncio.Future[storage_api.StoredEntry]:
        return asyncio.ensure_future(asyncio.wait_for(self.read_entry(ledger_id, entry_id),
                                                      timeout_s))

    async def read_last_add_confirmed(self, ledger_id: types.LedgerId) -> types.EntryId:
        return types.EntryId(int(await self._network.call(self._bookie_id, "lac", ledger_id)))  # type: ignore[call-overload]

    async def wait_last_add_confirmed(self, ledger_id: types.LedgerId, previous: types.EntryId,
                                      timeout_ms: int) -> types.EntryId:
        return await self.read_last_add_confirmed(ledger_id)

    async def fence_ledger(self, ledger_id: types.LedgerId, master_key: bytes) -> types.EntryId:
        return types.EntryId(int(await self._network.call(self._bookie_id, "fence", ledger_id)))  # type: ignore[call-overload]

    async def close(self) -> None:
        return None


class SimPool:
    def __init__(self, network: SimNetwork) -> None:
        self._network = network

    def get(self, bookie_id: types.BookieId) -> SimRpc:
        return SimRpc(self._network, bookie_id)

    async def close(self) -> None:
        return None


class SimSource:
    """Every bookie is listed as writable, as a registry that has not noticed a crash yet."""

    def __init__(self, bookies: list[SimBookie]) -> None:
        self._bookies = bookies

    async def bookies(self) -> list[placement.BookieInfo]:
        return [placement.BookieInfo(b.bookie_id) for b in self._bookies]


class SimMetadataStore:
    """Versions and compare-and-set in memory; counts how often a ledger was closed."""

    def __init__(self) -> None:
        self.data: dict[str, tuple[bytes, int]] = {}
        self.counters: dict[str, int] = {}
        self.history: list[tuple[str, bytes]] = []

    async def get(self, path: str) -> md.GetResult | None:
        await asyncio.sleep(0)
        found = self.data.get(path)
        if found is None:
            return None
        return md.GetResult(found[0], md.Stat(path, found[1], 0, 0))

    async def exists(self, path: str) -> bool:
        return path in self.data

    async def put(self, path: str, value: bytes, expected_version: int | None = None, *,
                  ephemeral: bool = False) -> md.Stat:
        await asyncio.sleep(0)
        current = self.data.get(path)
        if expected_version == md.VERSION_ABSENT and current is not None:
            raise md_errors.AlreadyExistsError(path)
        if expected_version is not None and expected_version >= 0:
            if current is None:
                raise md_errors.NotFoundError(path)
            if current[1] != expected_version:
                raise md_errors.BadVersionError(path)
        version = 0 if current is None else current[1] + 1
        self.data[path] = (value, version)
        self.history.append((path, value))
        return md.Stat(path, version, 0, 0)

    async def delete(self, path: str, expected_version: int | None = None) -> None:
        self.data.pop(path, None)

    async def delete_recursive(self, path: str) -> None:
        for key in [k for k in self.data if k == path or k.startswith(path + "/")]:
            del self.data[key]

    async def get_children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({k[len(prefix):].split("/")[0] for k in self.data if k.startswith(prefix)})

    def watch(self, path: str, *, prefix: bool = False) -> AsyncIterator[md.Notification]:
        raise NotImplementedError("the simulation does not watch")

    def register_session_listener(self, listener: md.SessionListener) -> None:
        return None

    def leader_election(self, path: str) -> md.LeaderElection:
        raise NotImplementedError("the simulation elects no leaders")

    async def next_id(self, path: str) -> int:
        self.counters[path] = self.counters.get(path, -1) + 1
        return self.counters[path]

    async def close(self) -> None:
        return None
