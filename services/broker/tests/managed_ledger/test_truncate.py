"""Truncate (Apache's asyncTruncate) and the on-demand trim of a managed ledger.

Truncate moves every cursor to the end and deletes every ledger but the
current one, whatever the retention; the cursors stay and read what comes
after. The trim on demand is the retention trim, run now.
"""

from __future__ import annotations

from typing import Any

from pulsar_bookie.client import ledger_metadata
from pulsar_broker.managed_ledger import api

NAME = "public/default/persistent/truncated"


async def ledger_exists(stack: Any, ledger_id: int) -> bool:
    in_storage = ledger_id in await stack.storage.list_ledgers()
    in_metadata = await stack.store.exists(ledger_metadata.ledger_path(ledger_id))
    assert in_storage == in_metadata
    return in_storage


async def test_truncate_clears_every_backlog_and_deletes_all_but_the_current_ledger(
    make_stack: Any,
) -> None:
    stack = await make_stack(max_entries_per_ledger=2, retention_time_minutes=-1,
                             retention_size_mb=-1)
    ml = await stack.factory.open(NAME)
    first = await ml.open_cursor("first", api.InitialPosition.EARLIEST)
    second = await ml.open_cursor("second", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(5)]
    await first.mark_delete(p[3])
    assert await ml.trim_consumed_ledgers() == []  # retention keeps everything

    deleted = await ml.truncate()

    assert deleted == [p[0].ledger_id, p[2].ledger_id]
    assert [info.ledger_id for info in ml.ledgers] == [ml.current_ledger_id]
    for ledger_id in deleted:
        assert not await ledger_exists(stack, ledger_id)
    assert await ledger_exists(stack, ml.current_ledger_id)
    for cursor in (first, second):
        assert cursor.mark_delete_position == p[4]
        assert cursor.number_of_entries_in_backlog == 0
    assert [c.name for c in ml.cursors] == ["first", "second"]


async def test_cursors_and_readers_read_what_is_added_after_a_truncate(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2, retention_time_minutes=-1,
                             retention_size_mb=-1)
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    reader = ml.new_non_durable_cursor(api.EARLIEST)
    for i in range(5):
        await ml.add_entry(b"old-%d" % i)
    await ml.truncate()
    assert not sub.has_more_entries()
    assert not reader.has_more_entries()
    await ml.add_entry(b"new")
    assert [e.data for e in await sub.read_entries(10)] == [b"new"]
    assert [e.data for e in await reader.read_entries(10)] == [b"new"]


async def test_truncate_survives_a_crash_and_the_ledger_list_matches_the_bookies(
    make_stack: Any, tmp_path: Any,
) -> None:
    config = {"max_entries_per_ledger": 2, "retention_time_minutes": -1, "retention_size_mb": -1}
    stack = await make_stack(root=tmp_path, **config)
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    for i in range(5):
        await ml.add_entry(b"%d" % i)
    await ml.truncate()
    kept = [info.ledger_id for info in ml.ledgers]
    await stack.stop(clean=False)

    stack = await make_stack(root=tmp_path, **config)
    ml = await stack.factory.open(NAME)
    sub = ml.cursors[0]
    assert sub.number_of_entries_in_backlog == 0
    for ledger_id in kept:
        assert ledger_id in [info.ledger_id for info in ml.ledgers]
        assert await ledger_exists(stack, ledger_id)
    await ml.add_entry(b"after")
    assert [e.data for e in await sub.read_entries(10)] == [b"after"]


async def test_truncate_keeps_what_was_added_after_the_cursors_moved(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=1, retention_time_minutes=-1,
                             retention_size_mb=-1)
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    await ml.add_entry(b"old")
    truncating = ml.truncate()
    # Added while truncate runs: a cursor moved before it sees it as backlog.
    added = ml.add_entry_future(b"racing")
    await truncating
    position = await added
    assert position > sub.mark_delete_position or sub.is_acknowledged(position)
    if not sub.is_acknowledged(position):
        assert [e.data for e in await sub.read_entries(10)] == [b"racing"]


async def test_trim_on_demand_follows_retention(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2, retention_time_minutes=10,
                             retention_size_mb=-1)
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(5)]
    await sub.mark_delete(p[4])
    await ml.wait_trimmed()  # the trim the acknowledgement asked for
    assert await ml.trim_consumed_ledgers() == []
    stack.clock.advance(minutes=10)
    assert await ml.trim_consumed_ledgers() == [p[0].ledger_id, p[2].ledger_id]
    assert [info.ledger_id for info in ml.ledgers] == [ml.current_ledger_id]
