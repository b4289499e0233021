"""Random concurrent workloads checked against a deliberately simple model of what was stored.

Adds, reads, flushes, garbage collection with compaction, deletions, fences,
restarts and simulated crashes interleave; after every round each ledger must read back exactly as
the model says. Two journal directories spread the ledgers over two journals.
"""

from __future__ import annotations

import asyncio
import pathlib
import random

import pytest
from pulsar_bookie import config as bookie_config
from pulsar_bookie import errors
from pulsar_bookie.storage import engine

from .conftest import KEY, MakeConf, freeze_as_crashed, restore_crashed


class Model:
    def __init__(self) -> None:
        self.entries: dict[int, dict[int, bytes]] = {}
        self.fenced: set[int] = set()
        self.deleted: set[int] = set()

    def writable(self) -> list[int]:
        return [lg for lg in range(1, 9) if lg not in self.fenced and lg not in self.deleted]


async def _check(bookie: engine.LedgerStorageEngine, model: Model, rng: random.Random) -> None:
    assert await bookie.list_ledgers() == sorted(model.entries)
    for ledger, entries in model.entries.items():
        assert await bookie.last_entry_id(ledger) == max(entries, default=-1)
        assert await bookie.is_fenced(ledger) == (ledger in model.fenced)
        sample = rng.sample(sorted(entries), min(len(entries), 15))
        got = await asyncio.gather(*(bookie.read_entry(ledger, e) for e in sample))
        assert [g.payload for g in got] == [entries[e] for e in sample]
    for ledger in model.deleted:
        with pytest.raises(errors.NoSuchLedgerError):
            await bookie.read_entry(ledger, 0)


async def _read_and_compare(
    bookie: engine.LedgerStorageEngine, ledger: int, entry: int, expected: bytes
) -> None:
    assert (await bookie.read_entry(ledger, entry)).payload == expected


async def _round(bookie: engine.LedgerStorageEngine, model: Model, rng: random.Random) -> None:
    calls = []
    # Reads pick only entries acknowledged in earlier rounds.
    readable = {ledger: sorted(entries) for ledger, entries in model.entries.items() if entries}
    for _ in range(rng.randint(20, 80)):
        writable = model.writable()
        if writable and rng.random() < 0.7:
            ledger = rng.choice(writable)
            entries = model.entries.setdefault(ledger, {})
            entry = len(entries)
            payload = rng.randbytes(rng.randint(1, 6000))
            entries[entry] = payload
            calls.append(bookie.add_entry(ledger, entry, entry - 1, payload, KEY))
        elif readable:
            ledger = rng.choice(sorted(readable))
            entry = rng.choice(readable[ledger])
            calls.append(_read_and_compare(bookie, ledger, entry, model.entries[ledger][entry]))
    if rng.random() < 0.3:
        calls.append(bookie.flush())
    if rng.random() < 0.2:
        calls.append(bookie.garbage_collect(0.6))
    await asyncio.gather(*calls)


async def _crash_and_restart(
    bookie: engine.LedgerStorageEngine, conf: bookie_config.BookieConfig, tmp_path: pathlib.Path
) -> engine.LedgerStorageEngine:
    """Restart from a copy of the disk taken with no flush or GC running: a crash at that moment."""
    async with bookie._index_lock:  # white box: hold off background flushes while copying
        frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    return bookie


@pytest.mark.parametrize("seed", [11, 12, 13])
async def test_random_operations_match_the_model(
    make_conf: MakeConf, tmp_path: pathlib.Path, seed: int
) -> None:
    rng = random.Random(seed)
    conf = make_conf(
        journalDirectories=(str(tmp_path / "journal" / "a"), str(tmp_path / "journal" / "b")),
        entryLogSizeLimit=64 * 1024,
        dbStorage_writeCacheMaxSizeMb=1,
        dbStorage_readAheadCacheMaxSizeMb=1,
    )
    model = Model()
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    try:
        for _ in range(25):
            await _round(bookie, model, rng)
            event = rng.random()
            if event < 0.1 and model.entries:
                ledger = rng.choice(sorted(model.entries))
                await bookie.delete_ledger(ledger)
                del model.entries[ledger]
                model.fenced.discard(ledger)
                model.deleted.add(ledger)
            elif event < 0.2 and model.writable():
                ledger = rng.choice(model.writable())
                await bookie.fence_ledger(ledger, KEY)
                model.entries.setdefault(ledger, {})
                model.fenced.add(ledger)
                with pytest.raises(errors.LedgerFencedError):
                    await bookie.add_entry(ledger, 10**6, 0, b"late", KEY)
            elif event < 0.3:
                await bookie.close()
                bookie = engine.LedgerStorageEngine(conf)
                await bookie.start()
            elif event < 0.45:
                bookie = await _crash_and_restart(bookie, conf, tmp_path)
            await _check(bookie, model, rng)
    finally:
        await bookie.close()
