"""A driver that streams concurrent adds into an engine and reports each acknowledged one.

Used by the crash tests: they run it as a child process, SIGKILL it at some
moment, reopen the data directories and check that every add reported here
reads back with identical bytes. Payloads are derived from (seed, ledger,
entry), so the checker can recompute them.

    python -m pulsar_bookie.storage.stress --data-dir D --seed S

prints `READY`, then `ACK <ledger> <entry> <crc32c of payload>` per completed
add (stdout flushed per line), and `FENCED <ledger>` once a requested fence
completed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import pathlib
import sys

import crc32c

from pulsar_bookie import config as bookie_config
from pulsar_bookie import types
from pulsar_bookie.storage import engine

MASTER_KEY = b"stress-key"


def payload(seed: int, ledger_id: int, entry_id: int, max_size: int = 4096) -> bytes:
    """The deterministic payload of an entry: its size and bytes follow from the ids and the seed."""
    digest = hashlib.sha256(f"{seed}:{ledger_id}:{entry_id}".encode()).digest()
    size = 1 + int.from_bytes(digest[:4], "little") % max_size
    return (digest * (size // len(digest) + 1))[:size]


def stress_config(data_dir: pathlib.Path, **overrides: object) -> bookie_config.BookieConfig:
    """Small limits so flushes, journal rolls and entry log rolls happen within seconds."""
    settings: dict[str, object] = {
        "journalDirectory": str(data_dir / "journal"),
        "ledgerDirectories": (str(data_dir / "ledgers"),),
        "dbStorage_writeCacheMaxSizeMb": 1,
        "flushInterval": 100,
        "journalMaxSizeMB": 1,
        "entryLogSizeLimit": 512 * 1024,
        "gcWaitTime": 200,
    }
    settings.update(overrides)
    return bookie_config.BookieConfig(**settings)  # type: ignore[arg-type]


def _report(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def _write_ledger(
    bookie: engine.LedgerStorageEngine, seed: int, ledger_id: int, entries: int, in_flight: int
) -> None:
    window = asyncio.Semaphore(in_flight)

    async def add(entry_id: int) -> None:
        try:
            data = payload(seed, ledger_id, entry_id)
            await bookie.add_entry(
                types.LedgerId(ledger_id),
                types.EntryId(entry_id),
                types.EntryId(entry_id - 1),
                data,
                MASTER_KEY,
            )
            _report(f"ACK {ledger_id} {entry_id} {crc32c.crc32c(data)}")
        finally:
            window.release()

    tasks = []
    for entry_id in range(entries):
        await window.acquire()
        tasks.append(asyncio.create_task(add(entry_id)))
    await asyncio.gather(*tasks)


async def run(args: argparse.Namespace) -> None:
    bookie = engine.LedgerStorageEngine(stress_config(pathlib.Path(args.data_dir)))
    await bookie.start()
    _report("READY")
    writers = [
        asyncio.create_task(_write_ledger(bookie, args.seed, ledger, args.entries, args.in_flight))
        for ledger in range(1, args.ledgers + 1)
    ]
    fence_ledger = args.ledgers + 1
    await bookie.add_entry(
        types.LedgerId(fence_ledger),
        types.EntryId(0),
        types.EntryId(-1),
        b"f",
        MASTER_KEY,
        recovery=True,
    )
    await bookie.fence_ledger(types.LedgerId(fence_ledger), MASTER_KEY)
    _report(f"FENCED {fence_ledger}")
    await asyncio.gather(*writers)
    _report("DONE")
    await bookie.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ledgers", type=int, default=4)
    parser.add_argument("--entries", type=int, default=100000, help="entries per ledger")
    parser.add_argument("--in-flight", type=int, default=64, help="adds in flight per ledger")
    asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
