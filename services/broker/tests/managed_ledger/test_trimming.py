"""Ledgers behind every durable cursor (and outside retention) are deleted, never the current one."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pulsar_bookie.client import ledger_metadata
from pulsar_broker.managed_ledger import api, config, ledger_list, trimming

NAME = "public/default/persistent/trimmed"


async def ledger_exists(stack: Any, ledger_id: int) -> bool:
    in_storage = ledger_id in await stack.storage.list_ledgers()
    in_metadata = await stack.store.exists(ledger_metadata.ledger_path(ledger_id))
    assert in_storage == in_metadata
    return in_storage


async def test_ledgers_behind_the_slowest_cursor_are_deleted(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    fast = await ml.open_cursor("fast", api.InitialPosition.EARLIEST)
    slow = await ml.open_cursor("slow", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(6)]
    l1, l2, l3 = p[0].ledger_id, p[2].ledger_id, p[4].ledger_id
    await fast.mark_delete(p[5])
    assert await ml.trim_consumed_ledgers() == []
    await slow.mark_delete(p[3])
    await ml.trim_consumed_ledgers()
    assert [info.ledger_id for info in ml.ledgers] == [l3]
    assert not await ledger_exists(stack, l1)
    assert not await ledger_exists(stack, l2)
    assert await ledger_exists(stack, l3)
    assert slow.number_of_entries_in_backlog == 2
    assert [e.data for e in await slow.read_entries(10)] == [b"4", b"5"]


async def test_the_current_ledger_is_never_deleted(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(5)]
    await sub.mark_delete(p[-1])
    await ml.trim_consumed_ledgers()
    assert [info.ledger_id for info in ml.ledgers] == [ml.current_ledger_id]
    assert await ledger_exists(stack, ml.current_ledger_id)
    assert ml.number_of_entries == 1


async def test_trimming_follows_mark_delete_on_its_own(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(4)]
    await sub.mark_delete(p[1])
    await ml.wait_trimmed()
    assert p[0].ledger_id not in [info.ledger_id for info in ml.ledgers]


async def test_trimming_follows_mark_delete_again_after_a_trim_finished(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(6)]
    await sub.mark_delete(p[1])
    await ml.wait_trimmed()
    # The finished trim is not kept (issue 16: ~0.5 KB per idle topic) ...
    assert ml._trimmer.task is None
    # ... and the next mark-delete starts a new one.
    await sub.mark_delete(p[3])
    await ml.wait_trimmed()
    assert [info.ledger_id for info in ml.ledgers] == [p[4].ledger_id]
    assert not await ledger_exists(stack, p[2].ledger_id)


async def test_without_cursors_retention_time_alone_decides(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2, retention_time_minutes=10)
    ml = await stack.factory.open(NAME)
    p = [await ml.add_entry(b"%d" % i) for i in range(5)]
    assert await ml.trim_consumed_ledgers() == []
    stack.clock.advance(minutes=10)
    await stack.factory.run_maintenance()
    assert [info.ledger_id for info in ml.ledgers] == [p[4].ledger_id]
    assert not await ledger_exists(stack, p[0].ledger_id)


async def test_retention_size_keeps_the_newest_consumed_ledgers(make_stack: Any) -> None:
    stack = await make_stack(
        max_entries_per_ledger=1, retention_time_minutes=-1, retention_size_mb=1
    )
    ml = await stack.factory.open(NAME)
    payload = b"z" * (400 * 1024)
    p = [await ml.add_entry(payload) for i in range(5)]
    await ml.trim_consumed_ledgers()
    kept = [info.ledger_id for info in ml.ledgers]
    # 5 x 400 KiB written, 1 MiB retained: the oldest three go, 800 KiB stay.
    assert kept == [p[3].ledger_id, p[4].ledger_id]
    assert p[4].ledger_id == ml.current_ledger_id


async def test_infinite_retention_keeps_everything(make_stack: Any) -> None:
    stack = await make_stack(
        max_entries_per_ledger=1, retention_time_minutes=-1, retention_size_mb=-1
    )
    ml = await stack.factory.open(NAME)
    for i in range(3):
        await ml.add_entry(b"%d" % i)
    stack.clock.advance(minutes=10_000)
    assert await ml.trim_consumed_ledgers() == []
    assert ml.number_of_entries == 3


def test_trimming_decision_table() -> None:
    ledgers = [api.LedgerInfo(1, 3, 30, 0), api.LedgerInfo(2, 3, 30, 0), api.LedgerInfo(3, 0, 0, 0)]
    no_retention = trimming.Retention(0, 0)
    keep_all = trimming.Retention(None, None)
    cases = [
        (api.Position(2, 2), no_retention, [1, 2]),
        (api.Position(2, 1), no_retention, [1]),
        (api.Position(1, -1), no_retention, []),
        (None, no_retention, [1, 2]),
        (api.Position(3, -1), keep_all, []),
        (api.Position(3, -1), trimming.Retention(None, 30), [1]),
        (api.Position(3, -1), trimming.Retention(60_000, None), []),
    ]
    for slowest, retention, expected in cases:
        doomed = trimming.ledgers_to_delete(ledgers, 3, slowest, retention, now_ms=1000)
        assert [info.ledger_id for info in doomed] == expected, (slowest, retention)


async def test_a_reader_behind_trimmed_ledgers_moves_on_to_what_still_exists(
    make_stack: Any,
) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    reader = ml.new_non_durable_cursor(api.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(6)]
    await sub.mark_delete(p[3])
    await ml.trim_consumed_ledgers()
    assert [e.position for e in await reader.read_entries(10)] == p[4:]
    assert reader.number_of_entries_in_backlog == 2


MINUTE_MS = 60_000


@pytest.mark.parametrize(
    ("entries", "size", "age_ms", "full"),
    [
        (0, 0, 10**9, False),  # an empty ledger is never rolled over, however old
        (10, 0, 0, False),  # full by entries but younger than the minimum rollover time
        (10, 0, MINUTE_MS, True),  # full by entries and old enough
        (1, 2**20, MINUTE_MS, True),  # full by size and old enough
        (1, 1, MINUTE_MS, False),  # old enough, not full
        (1, 1, 5 * MINUTE_MS, True),  # as old as the maximum rollover time
    ],
)
def test_a_ledger_is_full_by_entries_or_size_once_old_enough_or_by_age_alone(
    entries: int, size: int, age_ms: int, full: bool
) -> None:
    settings = dataclasses.replace(
        config.ManagedLedgerConfig(), max_entries_per_ledger=10, max_size_per_ledger_mbytes=1,
        min_ledger_rollover_time_minutes=1, max_ledger_rollover_time_minutes=5,
    )
    assert ledger_list.is_full(settings, entries, size, age_ms) is full
