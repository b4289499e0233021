"""Garbage collection: deleted ledgers' entry logs are removed, mostly dead logs are compacted."""

from __future__ import annotations

import asyncio

from pulsar_bookie.storage import engine

from .conftest import KEY, MakeConf

PAYLOAD = b"z" * 4000


async def _add(
    bookie: engine.LedgerStorageEngine, ledger: int, first: int, count: int, payload: bytes
) -> None:
    await asyncio.gather(
        *(bookie.add_entry(ledger, e, e - 1, payload, KEY) for e in range(first, first + count))
    )


async def test_entry_logs_of_deleted_ledgers_are_reclaimed(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(entryLogSizeLimit=64 * 1024))
    await bookie.start()
    await _add(bookie, 1, 0, 100, PAYLOAD)
    await bookie.flush()
    await _add(bookie, 2, 0, 100, PAYLOAD)
    await bookie.flush()
    await _add(bookie, 3, 0, 1, b"last")  # rolls past ledger 2's last log
    await bookie.flush()
    before = bookie.entry_log_disk_bytes()
    assert before > 800_000
    assert (await bookie.garbage_collect(0.0)).deleted_logs == ()  # nothing dead yet
    await bookie.delete_ledger(1)
    result = await bookie.garbage_collect(0.0)
    after = bookie.entry_log_disk_bytes()
    assert len(result.deleted_logs) >= 5 and result.compacted_logs == ()
    # Ledger 1's ~400 KB are gone, give or take the one log shared with ledger 2.
    assert before - after >= 330_000
    assert result.reclaimed_bytes == before - after
    for e in range(100):
        assert (await bookie.read_entry(2, e)).payload == PAYLOAD
    await bookie.close()


async def test_compaction_moves_live_entries_out_of_mostly_dead_logs(make_conf: MakeConf) -> None:
    conf = make_conf(entryLogSizeLimit=64 * 1024)
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    # Every flush puts one small live entry of ledger 1 beside 40 KB of ledger 2.
    for round_ in range(20):
        await bookie.add_entry(1, round_, round_ - 1, f"live-{round_}".encode(), KEY)
        await _add(bookie, 2, round_ * 10, 10, PAYLOAD)
        await bookie.flush()
    await _add(bookie, 3, 0, 20, PAYLOAD)  # fills the current log so the others can be collected
    await bookie.flush()
    await bookie.delete_ledger(2)
    before = bookie.entry_log_disk_bytes()
    assert (await bookie.garbage_collect(0.0)).compacted_logs == ()  # below no threshold
    result = await bookie.garbage_collect(0.5)
    after = bookie.entry_log_disk_bytes()
    assert len(result.compacted_logs) >= 5
    assert before - after > 600_000
    for round_ in range(20):
        assert (await bookie.read_entry(1, round_)).payload == f"live-{round_}".encode()
    await bookie.close()
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    for round_ in range(20):
        assert (await bookie.read_entry(1, round_)).payload == f"live-{round_}".encode()
    assert bookie.entry_log_disk_bytes() <= after
    await bookie.close()


async def test_background_gc_runs_every_gc_wait_time(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(entryLogSizeLimit=64 * 1024, gcWaitTime=50))
    await bookie.start()
    await _add(bookie, 1, 0, 50, PAYLOAD)
    await bookie.flush()
    await _add(bookie, 2, 0, 20, PAYLOAD)
    await bookie.flush()
    await bookie.delete_ledger(1)
    runs = bookie.stats().gc_runs

    async def collected() -> None:
        while bookie.stats().gc_runs < runs + 2:
            await asyncio.sleep(0.02)

    await asyncio.wait_for(collected(), 30)
    assert bookie.entry_log_disk_bytes() < 150_000
    await bookie.close()
