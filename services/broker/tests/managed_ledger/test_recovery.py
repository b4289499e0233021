"""Restarts: a managed ledger reopened from the same directories resumes where it was."""

from __future__ import annotations

from typing import Any

from pulsar_broker.managed_ledger import api

NAME = "public/default/persistent/restarted"


async def test_reopen_after_a_clean_restart_resumes_cursors_and_starts_a_new_ledger(
    make_stack: Any,
) -> None:
    first = await make_stack(max_entries_per_ledger=3)
    ml = await first.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(8)]
    await sub.mark_delete(p[2])
    await sub.delete([p[4], p[6]])
    old_current = ml.current_ledger_id
    await first.stop()

    second = await make_stack(max_entries_per_ledger=3)
    again = await second.factory.open(NAME)
    resumed = again.cursors[0]
    assert resumed.name == "sub"
    assert resumed.mark_delete_position == p[2]
    assert resumed.individually_deleted_ranges == [
        (api.Position(p[4].ledger_id, p[4].entry_id - 1), p[4]),
        (api.Position(p[6].ledger_id, p[6].entry_id - 1), p[6]),
    ]
    assert again.current_ledger_id not in (info.ledger_id for info in again.ledgers[:-1])
    assert again.current_ledger_id > old_current
    old = await second.client.get_ledger_metadata(old_current)
    assert old.is_closed and old.last_entry_id == 1
    assert again.last_confirmed_entry == p[7]
    redelivered = [e.position for e in await resumed.read_entries(100)]
    assert redelivered == [p[3], p[5], p[7]]
    after = await again.add_entry(b"after restart")
    assert after.ledger_id == again.current_ledger_id
    assert [e.data for e in await resumed.read_entries(100)] == [b"after restart"]


async def test_reopen_after_a_crash_recovers_every_acknowledged_entry(make_stack: Any) -> None:
    first = await make_stack()
    ml = await first.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(5)]
    await sub.delete([p[0], p[1], p[3]])
    # No close of the managed ledger: its ledger stays open, as after a crash.
    await first.stop(clean=False)

    second = await make_stack()
    again = await second.factory.open(NAME)
    old = await second.client.get_ledger_metadata(p[0].ledger_id)
    assert old.is_closed and old.last_entry_id == 4
    resumed = again.cursors[0]
    assert resumed.mark_delete_position == p[1]
    assert [e.data for e in await resumed.read_entries(100)] == [b"2", b"4"]
    assert resumed.number_of_entries_in_backlog == 2


async def test_an_empty_last_ledger_is_dropped_on_reopen(make_stack: Any) -> None:
    first = await make_stack()
    ml = await first.factory.open(NAME)
    sub = await ml.open_cursor("sub")
    written = await ml.add_entry(b"only")
    await first.stop()
    second = await make_stack()
    again = await second.factory.open(NAME)
    await second.stop()
    third = await make_stack()
    final = await third.factory.open(NAME)
    assert [info.entries for info in final.ledgers] == [1, 0]
    assert final.ledgers[0].ledger_id == written.ledger_id
    assert again.current_ledger_id not in await third.storage.list_ledgers()
    # The cursor was opened before the add, so that one entry is its backlog.
    assert final.cursors[0].number_of_entries_in_backlog == 1
    assert sub.name == "sub"


async def test_unpersisted_acknowledgements_are_redelivered_not_lost(make_stack: Any) -> None:
    first = await make_stack(cursor_position_flush_seconds=3600)
    ml = await first.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(4)]
    await sub.mark_delete(p[0])
    await sub.flush()
    await sub.mark_delete(p[2])
    await first.stop(clean=False)

    second = await make_stack()
    again = await second.factory.open(NAME)
    assert [e.position for e in await again.cursors[0].read_entries(10)] == p[1:]


async def test_only_the_oldest_unacked_ranges_are_persisted_and_the_rest_redelivered(
    make_stack: Any,
) -> None:
    first = await make_stack(max_unacked_ranges_to_persist=2)
    ml = await first.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    p = [await ml.add_entry(b"%d" % i) for i in range(10)]
    await sub.delete([p[1], p[3], p[5], p[7]])
    await first.stop()

    second = await make_stack()
    again = await second.factory.open(NAME)
    resumed = again.cursors[0]
    assert len(resumed.individually_deleted_ranges) == 2
    positions = [e.position for e in await resumed.read_entries(100)]
    assert positions == [p[0], p[2], p[4], p[5], p[6], p[7], p[8], p[9]]


async def test_terminated_ledger_stays_terminated_after_reopen(make_stack: Any) -> None:
    first = await make_stack()
    ml = await first.factory.open(NAME)
    await ml.add_entry(b"last")
    end = await ml.terminate()
    await first.stop()
    second = await make_stack()
    again = await second.factory.open(NAME)
    assert again.is_terminated
    assert again.last_confirmed_entry == end
    reader = again.new_non_durable_cursor(api.EARLIEST)
    assert [e.data for e in await reader.read_entries(10)] == [b"last"]


async def test_a_listed_last_ledger_whose_metadata_vanished_is_dropped(make_stack: Any) -> None:
    first = await make_stack()
    ml = await first.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    kept = await ml.add_entry(b"kept")
    await sub.mark_delete(kept)
    lost_ledger = ml.current_ledger_id
    await first.stop(clean=False)

    second = await make_stack()
    await second.client.delete_ledger(lost_ledger)
    again = await second.factory.open(NAME)
    assert lost_ledger not in [info.ledger_id for info in again.ledgers]
    assert again.cursors[0].number_of_entries_in_backlog == 0
    assert (await again.add_entry(b"new")).ledger_id == again.current_ledger_id
