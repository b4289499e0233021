"""What a managed ledger and the entry cache count (the source of the pulsar_ml_* metrics):
adds with their latency and size buckets, failures, ledger switches, reads, cache hits and
misses, mark-delete moves; over the real bookie engine and RocksDB metadata."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
from pulsar_broker.managed_ledger import api, errors, stats

NAME = "public/default/persistent/counted"


def test_counts_subtract_to_what_grew_and_add_up_over_ledgers() -> None:
    counters = stats.ManagedLedgerStats()
    counters.add_succeeded(0, 0, 100)
    before = counters.snapshot()
    counters.add_succeeded(3, 1, 200)
    counters.add_succeeded(2000, 2000, 2_000_000)
    counters.mark_deletes += 1
    grown = counters.snapshot().minus(before)
    assert (grown.adds_succeeded, grown.add_bytes, grown.mark_deletes) == (2, 2_000_200, 1)
    assert grown.add_latency_counts == (0, 0, 1, 0, 0, 0, 0, 0, 0, 1)  # (1, 5] ms, > 1 s
    assert grown.ledger_add_latency_counts == (0, 1, 0, 0, 0, 0, 0, 0, 0, 1)  # (0.5, 1] ms
    assert grown.entry_size_counts == (0, 1, 0, 0, 0, 0, 0, 0, 1)  # (128, 512], > 1232896
    assert before.plus(grown) == counters.snapshot()
    assert before.minus(counters.snapshot()) == stats.Counts()  # never below zero


async def test_adds_are_counted_with_their_latency_and_size(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    await ml.add_entry(b"x" * 10)
    slow = ml.add_entry_future(b"y" * 3000)
    stack.clock.advance(ms=30)  # the broker's clock moves while the add is being written
    await slow
    counts = ml.stats.snapshot()
    assert (counts.adds_succeeded, counts.add_bytes, counts.add_errors) == (2, 3010, 0)
    assert counts.add_latency_counts[0] == 1  # the clock did not move: (0, 0.5] ms
    assert counts.add_latency_counts[5] == 1  # 30 ms: (20, 50] ms
    # Both were handed to the ledger at once: the ledger's part is the whole add.
    assert counts.ledger_add_latency_counts == counts.add_latency_counts
    assert counts.entry_size_counts[0] == counts.entry_size_counts[4] == 1  # 10 B; 3000 B


async def test_an_add_that_fails_is_counted_as_an_error(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    await ml.add_entry(b"ok")
    await stack.storage.fence_ledger(ml.current_ledger_id, b"")
    with pytest.raises(errors.ManagedLedgerFencedError):
        await ml.add_entry(b"refused")
    counts = ml.stats.snapshot()
    assert (counts.adds_succeeded, counts.add_errors) == (1, 1)


async def test_a_rollover_is_counted_as_a_ledger_switch(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("keeps-ledgers", api.InitialPosition.EARLIEST)
    for i in range(3):
        await ml.add_entry(b"%d" % i)
    assert len(ml.ledgers) == 2
    assert sum(ml.stats.snapshot().ledger_switch_counts) == 1


async def test_tailing_reads_hit_the_cache_and_reads_past_it_miss(
        make_stack: Any, tmp_path: pathlib.Path) -> None:
    stack = await make_stack(cache_size_mb=1)
    ml = await stack.factory.open(NAME)
    positions = [await ml.add_entry(b"z" * 100) for _ in range(3)]
    await ml.read_positions(positions)
    cache = stack.factory.cache_counts()
    assert (cache.hits, cache.hit_bytes, cache.misses, cache.inserted_entries) == (3, 300, 0, 3)
    assert (cache.entries, cache.used_bytes) == (3, 300)
    cold = await make_stack(tmp_path / "cold", cache_size_mb=0)
    uncached = await cold.factory.open("public/default/persistent/cold")
    positions = [await uncached.add_entry(b"z" * 100) for _ in range(3)]
    await uncached.read_positions(positions)
    counts = uncached.stats.snapshot()
    assert (counts.entries_read, counts.read_bytes, counts.cache_missed_entries) == (3, 300, 3)
    cold_cache = cold.factory.cache_counts()
    assert (cold_cache.hits, cold_cache.misses, cold_cache.miss_bytes) == (0, 3, 300)


async def test_a_read_that_fails_is_counted_as_an_error(make_stack: Any) -> None:
    stack = await make_stack(cache_size_mb=0)
    ml = await stack.factory.open(NAME)
    position = await ml.add_entry(b"gone")
    await stack.storage.close()
    with pytest.raises(errors.NonRecoverableLedgerError):
        await ml.read_positions([position])
    assert ml.stats.snapshot().read_errors == 1


async def test_the_cache_counts_evictions_and_the_entries_they_removed(make_stack: Any) -> None:
    stack = await make_stack(cache_size_mb=1)
    ml = await stack.factory.open(NAME)
    for _ in range(4):  # 3 fit in 1 MB; the fourth evicts the first
        await ml.add_entry(b"y" * (300 * 1024))
    cache = stack.factory.cache_counts()
    assert (cache.inserted_entries, cache.evictions, cache.evicted_entries) == (4, 1, 1)


async def test_mark_delete_moves_of_durable_cursors_are_counted(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    durable = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    reader = ml.new_non_durable_cursor(api.Position(-1, -1))
    positions = [await ml.add_entry(b"%d" % i) for i in range(3)]
    await durable.mark_delete(positions[0])
    await durable.mark_delete(positions[0])  # no move
    await durable.delete([positions[2]])  # a hole: the mark-delete position stays
    await durable.delete([positions[1]])  # fills it: moves to the end
    await reader.mark_delete(positions[2])
    assert ml.stats.snapshot().mark_deletes == 2


def test_unchanged_since_tells_whether_any_counter_moved_after_a_snapshot() -> None:
    counters = stats.ManagedLedgerStats()
    counters.add_succeeded(1, 1, 100)
    taken = counters.snapshot()
    assert counters.unchanged_since(taken)
    counters.ledger_switched(3)  # only a bucket moves
    assert not counters.unchanged_since(taken)
    taken = counters.snapshot()
    assert counters.unchanged_since(taken)
    counters.mark_deletes += 1
    assert not counters.unchanged_since(taken)
