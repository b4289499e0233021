"""Autorecovery: time to bring a lost bookie's data back to full replication, and its MB/s.

Four `pulsar bookie` processes and `pulsar autorecovery` workers on loopback,
real etcd. N MB are written as closed ledgers at E=3 WQ=2 AQ=2; the bookie
holding the most is SIGKILLed and its data deleted. Reported: when its
registration vanished (zkTimeout), when the auditor marked its ledgers, when
no ledger names it any more, and the re-replication throughput (bytes that
had a copy on the lost bookie / time from first mark to done).

    python -m bench autorecovery [--mb 64] [--entry-kb 16] [--workers 1] [--no-sync]
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import random
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable

from pulsar_bookie.autorecovery import plan, underreplication
from pulsar_bookie.client import ledger_metadata
from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.client.replicated import placement
from pulsar_bookie.net import client as bookie_net
from pulsar_bookie.service import registration, testing
from pulsar_common.etcd_server import EtcdServer
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import factory

BOOKIES = 4
LEDGER_MB = 8
POLL_S = 0.05


class Registered(placement.BookieSource):
    def __init__(self, store: metadata_api.MetadataStore) -> None:
        self._store = store

    async def bookies(self) -> list[placement.BookieInfo]:
        return [placement.BookieInfo(b.bookie_id, b.rack, b.writable)
                for b in await registration.list_bookies(self._store)]


async def _write(client: replicated.ReplicatedLedgerClient, total_mb: int,
                 entry_bytes: int) -> None:
    rng = random.Random(1)
    entries_per_ledger = LEDGER_MB * 1024 * 1024 // entry_bytes
    for _ in range(max(1, total_mb // LEDGER_MB)):
        handle = await client.create_ledger(3, 2, 2)
        for start in range(0, entries_per_ledger, 64):
            await asyncio.gather(*(handle.append(rng.randbytes(entry_bytes))
                                   for _ in range(min(64, entries_per_ledger - start))))
        await handle.close()


async def _bytes_on(store: metadata_api.MetadataStore, bookie: str, entry_bytes: int) -> int:
    meta = ledger_metadata.LedgerMetadataStore(store)
    total = 0
    for ledger_id in await meta.ledger_ids():
        metadata = (await meta.read(ledger_id)).metadata
        for fragment in plan.fragment_ranges(metadata):
            if bookie in fragment.ensemble:
                position = fragment.ensemble.index(bookie)
                total += entry_bytes * len(list(plan.entries_at(
                    position, fragment, metadata.ensemble_size, metadata.write_quorum_size)))
    return total


async def _wait(check: Callable[[], Awaitable[bool]], timeout_s: float = 600) -> float:
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise TimeoutError("autorecovery did not finish in time")
        await asyncio.sleep(POLL_S)
    return time.monotonic()


async def _measure(root: pathlib.Path, args: argparse.Namespace) -> None:
    etcd = EtcdServer(root / "etcd")
    etcd.start()
    processes: list[testing.BookieProcess] = []
    try:
        for i in range(BOOKIES):
            processes.append(testing.BookieProcess(root / f"bookie-{i}", metadata_url=etcd.url,
                                                   sync=args.sync))
            processes[-1].launch()
        for process in processes:
            process.wait_ready()
        for i in range(args.workers):
            processes.append(testing.AutoRecoveryProcess(
                root / f"autorecovery-{i}", metadata_url=etcd.url,
                overrides={"rereplicationEntryBatchSize": str(args.batch)}).start())
        store = await factory.create_store(etcd.url)
        pool = bookie_net.BookieClientPool()
        client = replicated.ReplicatedLedgerClient(store, pool, Registered(store))
        started = time.monotonic()
        await _write(client, args.mb, args.entry_kb * 1024)
        written_s = time.monotonic() - started
        bookies = processes[:BOOKIES]
        load = {p.bookie_id: await _bytes_on(store, p.bookie_id, args.entry_kb * 1024)
                for p in bookies}
        victim = max(bookies, key=lambda p: load[p.bookie_id])
        marks = underreplication.UnderReplicationStore(store)

        async def unregistered() -> bool:
            return victim.bookie_id not in {
                b.bookie_id for b in await registration.list_bookies(store)}

        async def marked() -> bool:
            return bool(await marks.ledger_ids())

        async def done() -> bool:
            return not await marks.ledger_ids() and await _bytes_on(
                store, victim.bookie_id, 1) == 0

        killed = time.monotonic()
        victim.kill()
        shutil.rmtree(victim.data_dir / "journal")
        shutil.rmtree(victim.data_dir / "ledgers")
        gone = await _wait(unregistered)
        first_mark = await _wait(marked)
        finished = await _wait(done)
        moved_mb = load[victim.bookie_id] / 2**20
        print(f"  wrote {args.mb} MB in {written_s:.1f}s (E=3 WQ=2 AQ=2, {args.entry_kb} KiB "
              f"entries, journalSyncData={args.sync}); lost bookie held {moved_mb:.1f} MB")
        print(f"  registration gone {gone - killed:.1f}s after SIGKILL, ledgers marked "
              f"{first_mark - killed:.1f}s, fully replicated {finished - killed:.1f}s")
        print(f"  re-replication: {moved_mb / max(finished - first_mark, 1e-6):.1f} MB/s with "
              f"{args.workers} worker(s), batch {args.batch}")
        await pool.close()
        await store.close()
    finally:
        for process in processes:
            process.kill()
        etcd.stop()


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench autorecovery")
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--entry-kb", type=int, default=16)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--no-sync", dest="sync", action="store_false")
    args, _ = parser.parse_known_args(argv)
    root = pathlib.Path(tempfile.mkdtemp(prefix="bench-autorecovery-"))
    try:
        asyncio.run(_measure(root, args))
    finally:
        shutil.rmtree(root, ignore_errors=True)
