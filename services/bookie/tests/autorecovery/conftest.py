"""A real cluster for the autorecovery tests: etcd, bookie processes, `pulsar autorecovery`
processes, and a replicated ledger client in the test process writing known payloads."""

from __future__ import annotations

import asyncio
import json
import pathlib
import random
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping

import pytest
from pulsar_bookie import types
from pulsar_bookie.autorecovery import plan
from pulsar_bookie.client import ledger_metadata
from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.client.replicated import placement
from pulsar_bookie.net import client as bookie_net
from pulsar_bookie.service import registration, testing
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import factory

#: Short sessions: a killed process's registration or leadership vanishes in about 4 s
#: (shorter ones expire under load while a process starts).
FAST_SESSION = {"zkTimeout": "4000"}


def payload(ledger_id: int, entry_id: int, size: int = 2048) -> bytes:
    return random.Random(f"{ledger_id}:{entry_id}").randbytes(size)


class RegisteredBookies(placement.BookieSource):
    def __init__(self, store: metadata_api.MetadataStore) -> None:
        self._store = store

    async def bookies(self) -> list[placement.BookieInfo]:
        return [placement.BookieInfo(b.bookie_id, b.rack, b.writable)
                for b in await registration.list_bookies(self._store)]


class Cluster:
    def __init__(self, root: pathlib.Path, metadata_url: str) -> None:
        self.root = root
        self.metadata_url = metadata_url
        self.bookies: list[testing.BookieProcess] = []
        self.recoveries: list[testing.AutoRecoveryProcess] = []

    def start_bookies(self, count: int, overrides: Mapping[str, str] | None = None) -> None:
        started = []
        for _ in range(count):
            process = testing.BookieProcess(
                self.root / f"bookie-{len(self.bookies)}", metadata_url=self.metadata_url,
                overrides={**FAST_SESSION, **(overrides or {})}, sync=False)
            self.bookies.append(process)
            started.append(process)
            process.launch()
        for process in started:
            process.wait_ready()

    def start_autorecovery(self, overrides: Mapping[str, str] | None = None
                           ) -> testing.AutoRecoveryProcess:
        process = testing.AutoRecoveryProcess(
            self.root / f"autorecovery-{len(self.recoveries)}", metadata_url=self.metadata_url,
            overrides={**FAST_SESSION, **(overrides or {})})
        self.recoveries.append(process)
        return process.start()

    def bookie(self, bookie_id: str) -> testing.BookieProcess:
        return next(b for b in self.bookies if b.bookie_id == bookie_id)

    def lose(self, bookie_id: str) -> None:
        """SIGKILL the bookie and delete its data: it will never come back."""
        victim = self.bookie(bookie_id)
        victim.kill()
        shutil.rmtree(victim.data_dir / "journal")
        shutil.rmtree(victim.data_dir / "ledgers")

    def http_json(self, process: testing.BookieProcess, method: str, path: str,
                  body: object = None) -> tuple[int, object]:
        status, raw = process.http(method, path,
                                   None if body is None else json.dumps(body).encode())
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode()

    def stop_all(self) -> None:
        for process in [*self.recoveries, *self.bookies]:
            process.kill()


@pytest.fixture
def cluster(tmp_path: pathlib.Path, etcd_url: str) -> Iterator[Cluster]:
    started = Cluster(tmp_path, etcd_url)
    yield started
    started.stop_all()


@pytest.fixture
async def store(etcd_url: str) -> AsyncIterator[metadata_api.MetadataStore]:
    opened = await factory.create_store(etcd_url)
    yield opened
    await opened.close()


@pytest.fixture
async def pool() -> AsyncIterator[bookie_net.BookieClientPool]:
    opened = bookie_net.BookieClientPool(bookie_net.ClientSettings(add_timeout_s=5,
                                                                   read_timeout_s=10))
    yield opened
    await opened.close()


@pytest.fixture
def ledgers(store: metadata_api.MetadataStore,
            pool: bookie_net.BookieClientPool) -> replicated.ReplicatedLedgerClient:
    return replicated.ReplicatedLedgerClient(store, pool, RegisteredBookies(store),
                                             rng=random.Random(7))


async def write_closed_ledgers(client: replicated.ReplicatedLedgerClient, count: int,
                               entries: int, size: int = 2048) -> list[types.LedgerId]:
    created = []
    for _ in range(count):
        handle = await client.create_ledger(3, 2, 2)
        for start in range(0, entries, 100):
            await asyncio.gather(*(handle.append(payload(handle.ledger_id, e, size))
                                   for e in range(start, min(start + 100, entries))))
        await handle.close()
        created.append(handle.ledger_id)
    return created


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float,
                     what: str) -> None:
    """Poll a condition that other processes make true, until timeout_s."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, f"not in {timeout_s}s: {what}"
        await asyncio.sleep(0.1)


async def references(store: metadata_api.MetadataStore, bookie_id: str) -> list[int]:
    """Ledgers whose metadata still names bookie_id."""
    meta = ledger_metadata.LedgerMetadataStore(store)
    found: list[int] = []
    for ledger_id in await meta.ledger_ids():
        if bookie_id in plan.bookies_of((await meta.read(ledger_id)).metadata):
            found.append(ledger_id)
    return found


async def assert_fully_replicated(store: metadata_api.MetadataStore,
                                  pool: bookie_net.BookieClientPool, live: set[str],
                                  size: int = 2048) -> int:
    """Every closed fragment of every ledger: ensemble of distinct live bookies, and every
    bookie holds, byte for byte, each entry the striping puts on it. Returns entries checked."""
    meta = ledger_metadata.LedgerMetadataStore(store)
    checked = 0
    for ledger_id in await meta.ledger_ids():
        metadata = (await meta.read(ledger_id)).metadata
        for fragment in plan.fragment_ranges(metadata):
            assert len(set(fragment.ensemble)) == len(fragment.ensemble), metadata
            assert set(fragment.ensemble) <= live, (ledger_id, fragment.ensemble, live)
            if not fragment.closed:
                continue
            for position, bookie in enumerate(fragment.ensemble):
                wanted = list(plan.entries_at(position, fragment, metadata.ensemble_size,
                                              metadata.write_quorum_size))
                for start in range(0, len(wanted), 200):
                    chunk = wanted[start:start + 200]
                    stored = await asyncio.gather(*(
                        pool.get(bookie).read_entry(metadata.ledger_id, e) for e in chunk))
                    for entry_id, entry in zip(chunk, stored):
                        assert entry.payload == payload(ledger_id, entry_id, size), (
                            ledger_id, entry_id, bookie)
                    checked += len(chunk)
    return checked
