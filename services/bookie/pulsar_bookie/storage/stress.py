"""A driver that streams concurrent adds into an engine and reports each acknowledged one.

Used by the crash tests: they run it as a child process, SIGKILL it at some
moment, reopen the data directories and check that every add reported here
reads back with identical bytes. Payloads are derived from (seed, ledger,
entry), so the checker can recompute them.

    python -m pulsar_bookie.storage.stress --data-dir D --seed S

prints `READY`, then `ACK <ledger> <entry> <crc32c of payload>` per completed
add (stdout flushed per line), `FENCED <ledger>` once a fence completed, and
`DELETING <ledger>` / `DELETED <ledger>` around each deletion: every writer
fills ledger after ledger and deletes the one two generations back, so
garbage collection and compaction run while the process may be killed.
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
        "majorCompactionInterval": 1,
        "majorCompactionThreshold": 0.5,
        # About half of the entries (1..4096 bytes) stay in the journal files.
        "journalResidentEntryMinBytes": 2048,
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


async def _writer(
    bookie: engine.LedgerStorageEngine, args: argparse.Namespace, number: int
) -> None:
    """Fill ledger after ledger; delete the one two generations back, so GC and compaction have work."""
    written: list[int] = []
    for generation in range(args.generations):
        ledger_id = ledger_for(args.run, args.ledgers, number, generation)
        await _write_ledger(bookie, args.seed, ledger_id, args.entries, args.in_flight)
        written.append(ledger_id)
        if len(written) > 2:
            old = written.pop(0)
            _report(f"DELETING {old}")
            await bookie.delete_ledger(types.LedgerId(old))
            _report(f"DELETED {old}")


def ledger_for(run_number: int, writers: int, writer: int, generation: int) -> int:
    return 1 + run_number * 1_000_000 + writer + generation * writers


async def run(args: argparse.Namespace) -> None:
    bookie = engine.LedgerStorageEngine(stress_config(pathlib.Path(args.data_dir)))
    await bookie.start()
    _report("READY")
    writers = [asyncio.create_task(_writer(bookie, args, w)) for w in range(args.ledgers)]
    fence_ledger = types.LedgerId(1_000_000_000 + args.run)
    await bookie.add_entry(fence_ledger, types.EntryId(0), types.EntryId(-1), b"f", MASTER_KEY)
    await bookie.fence_ledger(fence_ledger, MASTER_KEY)
    _report(f"FENCED {fence_ledger}")
    await asyncio.gather(*writers)
    _report("DONE")
    await bookie.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--run", type=int, default=0, help="run number: ledger ids differ per run")
    parser.add_argument("--ledgers", type=int, default=4, help="ledgers written at once")
    parser.add_argument("--entries", type=int, default=200, help="entries per ledger")
    parser.add_argument("--generations", type=int, default=1000, help="ledgers per writer")
    parser.add_argument("--in-flight", type=int, default=64, help="adds in flight per ledger")
    asyncio.run(run(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
