"""Read paths: write cache, entry log through the index, read-ahead cache; LAC and last entry."""

from __future__ import annotations

import asyncio

import pytest
from pulsar_bookie import errors, types
from pulsar_bookie.storage import engine

from .conftest import KEY, MakeConf


def body(entry: int) -> bytes:
    return f"entry-{entry}-".encode() * 20


async def _fill(bookie: engine.LedgerStorageEngine, ledger: int, count: int) -> None:
    await asyncio.gather(*(bookie.add_entry(ledger, e, e - 1, body(e), KEY) for e in range(count)))


async def test_unflushed_entries_are_read_from_the_write_cache(
    bookie: engine.LedgerStorageEngine,
) -> None:
    await _fill(bookie, 1, 50)
    entry = await bookie.read_entry(1, 17)
    assert entry == engine.api.StoredEntry(1, 17, 16, body(17))
    assert bookie.stats().entry_log_reads == 0


async def test_flushed_entries_come_from_the_entry_log_then_the_read_ahead_cache(
    bookie: engine.LedgerStorageEngine,
) -> None:
    await _fill(bookie, 1, 50)
    await _fill(bookie, 2, 50)
    await bookie.flush()
    assert bookie.stats().write_cache_bytes == 0
    assert (await bookie.read_entry(1, 10)).payload == body(10)
    assert bookie.stats().entry_log_reads == 1
    for e in range(11, 50):
        entry = await bookie.read_entry(1, e)
        assert (entry.payload, entry.last_add_confirmed) == (body(e), e - 1)
    stats = bookie.stats()
    assert stats.entry_log_reads == 1
    assert stats.read_cache_hits == 39
    # The read-ahead stops at the ledger's end: ledger 2 needs its own read.
    assert (await bookie.read_entry(2, 0)).payload == body(0)
    assert bookie.stats().entry_log_reads == 2


async def test_without_a_read_cache_every_read_goes_to_the_entry_log(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(dbStorage_readAheadCacheMaxSizeMb=0))
    await bookie.start()
    await _fill(bookie, 1, 20)
    await bookie.flush()
    for e in range(20):
        assert (await bookie.read_entry(1, e)).payload == body(e)
    assert bookie.stats().entry_log_reads == 20
    await bookie.close()


async def test_read_ahead_is_bounded_by_the_batch_size(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(dbStorage_readAheadCacheBatchSize=10))
    await bookie.start()
    await _fill(bookie, 1, 100)
    await bookie.flush()
    for e in range(100):
        assert (await bookie.read_entry(1, e)).payload == body(e)
    assert bookie.stats().entry_log_reads == 10
    await bookie.close()


async def test_reads_across_many_entry_logs_after_restart(make_conf: MakeConf) -> None:
    conf = make_conf(entryLogSizeLimit=64 * 1024, dbStorage_writeCacheMaxSizeMb=1)
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    await _fill(bookie, 1, 2000)
    await bookie.close()
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    got = await asyncio.gather(*(bookie.read_entry(1, e) for e in range(2000)))
    assert [g.payload for g in got] == [body(e) for e in range(2000)]
    await bookie.close()


async def test_unknown_ledger_and_unknown_entry_are_told_apart(
    bookie: engine.LedgerStorageEngine,
) -> None:
    with pytest.raises(errors.NoSuchLedgerError):
        await bookie.read_entry(9, 0)
    await _fill(bookie, 1, 3)
    with pytest.raises(errors.NoSuchEntryError):
        await bookie.read_entry(1, 3)
    await bookie.flush()
    with pytest.raises(errors.NoSuchEntryError):
        await bookie.read_entry(1, 3)
    with pytest.raises(errors.NoSuchLedgerError):
        await bookie.read_last_add_confirmed(9)
    with pytest.raises(errors.NoSuchLedgerError):
        await bookie.last_entry_id(9)


async def test_lac_and_last_entry_follow_the_highest_seen(
    bookie: engine.LedgerStorageEngine,
) -> None:
    await bookie.add_entry(1, 0, types.INVALID_ENTRY_ID, b"a", KEY)
    assert await bookie.read_last_add_confirmed(1) == types.INVALID_ENTRY_ID
    await bookie.add_entry(1, 2, 1, b"c", KEY)
    await bookie.add_entry(1, 1, 0, b"b", KEY)  # out of order: neither goes back
    assert await bookie.read_last_add_confirmed(1) == 1
    assert await bookie.last_entry_id(1) == 2
    await bookie.flush()
    assert await bookie.read_last_add_confirmed(1) == 1
    assert await bookie.last_entry_id(1) == 2


async def test_reads_over_more_entry_logs_than_open_files_allowed(
    make_conf: MakeConf, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pulsar_bookie.storage import entry_log

    monkeypatch.setattr(entry_log, "OPEN_LOGS_MAX", 3)
    bookie = engine.LedgerStorageEngine(
        make_conf(entryLogSizeLimit=64 * 1024, dbStorage_readAheadCacheMaxSizeMb=0)
    )
    await bookie.start()
    await _fill(bookie, 1, 2000)
    await bookie.flush()
    got = await asyncio.gather(*(bookie.read_entry(1, e) for e in range(0, 2000, 7)))
    assert [g.payload for g in got] == [body(e) for e in range(0, 2000, 7)]
    await bookie.close()


async def test_concurrent_reads_of_a_range_share_the_run_being_read(
        make_conf: MakeConf, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many reads of one range at once (a client reading a batch): those arriving while a
    run covering their entry is read wait for it instead of each reading the run again."""
    import time

    bookie = engine.LedgerStorageEngine(make_conf(numReadWorkerThreads=8))
    await bookie.start()
    try:
        await _fill(bookie, 1, 100)
        await bookie.flush()
        assert bookie._reader is not None
        logger = bookie._reader.logger
        disk_read = logger.read

        def slow_disk(log_id: int, offset: int, size: int) -> bytes:
            time.sleep(0.05)  # a slow disk: the other reads arrive while this one runs
            return disk_read(log_id, offset, size)

        monkeypatch.setattr(logger, "read", slow_disk)
        entries = await asyncio.gather(*(bookie.read_entry(1, e) for e in range(100)))
        assert [e.payload for e in entries] == [body(e) for e in range(100)]
        # Without sharing, each of the 8 reader threads would read its own run.
        assert bookie.stats().entry_log_reads <= 3
        assert bookie._reader.shared_reads > 0
    finally:
        await bookie.close()
