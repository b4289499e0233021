"""Limits: the write cache never grows past its size; adds wait for the flush, then time out."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pulsar_bookie import errors
from pulsar_bookie.storage import engine

from .conftest import KEY, MakeConf

MB = 1024 * 1024


async def test_write_cache_stays_within_its_limit_under_a_stream_of_adds(
    make_conf: MakeConf,
) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(dbStorage_writeCacheMaxSizeMb=1))
    await bookie.start()
    window = asyncio.Semaphore(64)
    peak = 0

    async def add(entry: int) -> None:
        nonlocal peak
        try:
            await bookie.add_entry(1, entry, entry - 1, bytes([entry % 256]) * 10_000, KEY)
            peak = max(peak, bookie.stats().write_cache_bytes)
        finally:
            window.release()

    tasks = []
    for entry in range(800):  # 8 MB through a 1 MB cache
        await window.acquire()
        tasks.append(asyncio.create_task(add(entry)))
    await asyncio.gather(*tasks)
    assert 0 < peak <= MB
    assert bookie.stats().flushes >= 8
    for entry in range(0, 800, 37):
        assert (await bookie.read_entry(1, entry)).payload == bytes([entry % 256]) * 10_000
    await bookie.close()


async def test_adds_wait_for_a_slow_flush_and_give_up_after_the_throttle_time(
    make_conf: MakeConf,
) -> None:
    bookie = engine.LedgerStorageEngine(
        make_conf(dbStorage_writeCacheMaxSizeMb=1, dbStorage_maxThrottleTimeMs=1500)
    )
    await bookie.start()
    disk_stuck = threading.Event()
    # White box: occupy the flush thread, as a stalled disk would.
    stall = bookie._flush_thread.submit(disk_stuck.wait, 60)
    payload = b"x" * 100_000
    entry = 0
    with pytest.raises(errors.TooManyRequestsError):
        while entry < 100:  # both halves fill; then adds must wait and finally refuse
            await bookie.add_entry(1, entry, entry - 1, payload, KEY)
            entry += 1
    assert 5 <= entry < 20
    waiting = asyncio.create_task(bookie.add_entry(1, entry, entry - 1, payload, KEY))
    await asyncio.sleep(0)
    assert not waiting.done()
    disk_stuck.set()
    stall.result(10)
    await asyncio.wait_for(waiting, 30)
    assert (await bookie.read_entry(1, entry)).payload == payload
    await bookie.close()


async def test_reads_beyond_the_pending_read_limit_are_refused(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(
        make_conf(numReadWorkerThreads=1, maxPendingReadRequestsPerThread=2)
    )
    await bookie.start()
    for entry in range(3):
        await bookie.add_entry(
            entry + 1, 0, -1, b"x", KEY
        )  # three ledgers: no read-ahead between them
    await bookie.flush()
    disk_stuck = threading.Event()
    stall = bookie._read_threads.submit(disk_stuck.wait, 60)  # white box: a stalled disk
    waiting = [asyncio.create_task(bookie.read_entry(ledger, 0)) for ledger in (1, 2)]
    await asyncio.sleep(0)
    with pytest.raises(errors.TooManyRequestsError):
        await bookie.read_entry(3, 0)
    disk_stuck.set()
    stall.result(10)
    assert [(await w).payload for w in waiting] == [b"x", b"x"]
    assert (await bookie.read_entry(3, 0)).payload == b"x"
    await bookie.close()
