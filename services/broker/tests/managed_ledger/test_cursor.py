"""Cursors over a real managed ledger: positions, acknowledgements, seeks, search, readers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulsar_broker.managed_ledger import api, errors, metadata

NAME = "public/default/persistent/cursors"
P = api.Position


async def filled(stack: Any, count: int, *, cursor: str = "sub") -> tuple[Any, Any, list[P]]:
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor(cursor, api.InitialPosition.EARLIEST)
    positions = [await ml.add_entry(b"%d" % i) for i in range(count)]
    return ml, sub, positions


async def persisted(stack: Any, cursor: str = "sub") -> dict[str, Any]:
    result = await stack.store.get(metadata.cursor_path(NAME, cursor))
    assert result is not None
    value: dict[str, Any] = json.loads(result.value)
    return value


async def test_latest_cursor_starts_after_the_last_entry(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    old = await ml.add_entry(b"before")
    sub = await ml.open_cursor("sub")
    assert sub.mark_delete_position == old
    assert not sub.has_more_entries()
    new = await ml.add_entry(b"after")
    assert [e.position for e in await sub.read_entries(10)] == [new]


async def test_earliest_cursor_starts_at_the_first_entry(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    first = await ml.add_entry(b"first")
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    assert sub.read_position == first
    assert sub.number_of_entries_in_backlog == 1


async def test_opening_a_cursor_twice_returns_the_same_cursor(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    assert await ml.open_cursor("sub") is await ml.open_cursor("sub")
    assert [c.name for c in ml.cursors] == ["sub"]


async def test_individual_acks_are_kept_as_ranges_and_move_mark_delete(
    make_stack: Any,
) -> None:
    stack = await make_stack(max_entries_per_ledger=3)
    _ml, sub, p = await filled(stack, 7)
    await sub.delete([p[1], p[2], p[3], p[5]])
    assert sub.mark_delete_position == P(p[0].ledger_id, -1)
    assert sub.individually_deleted_ranges == [
        (P(p[1].ledger_id, 0), p[3]),
        (P(p[5].ledger_id, 1), p[5]),
    ]
    assert sub.number_of_entries_in_backlog == 3
    await sub.delete([p[0]])
    assert sub.mark_delete_position == p[3]
    assert sub.individually_deleted_ranges == [(P(p[5].ledger_id, 1), p[5])]
    assert sub.is_acknowledged(p[5]) and not sub.is_acknowledged(p[4])
    stored = await persisted(stack)
    assert stored["markDeletePosition"] == {
        "ledgerId": p[3].ledger_id, "entryId": p[3].entry_id
    }
    assert len(stored["individualDeletedMessages"]) == 1


async def test_reads_skip_individually_acknowledged_entries(stack: Any) -> None:
    _ml, sub, p = await filled(stack, 5)
    await sub.delete([p[1], p[3]])
    assert [e.position for e in await sub.read_entries(10)] == [p[0], p[2], p[4]]


async def test_cumulative_ack_moves_mark_delete_and_read_position(stack: Any) -> None:
    _ml, sub, p = await filled(stack, 5)
    await sub.mark_delete(p[2], {"seq": 7})
    assert sub.mark_delete_position == p[2]
    assert sub.read_position == p[3]
    assert sub.properties == {"seq": 7}
    assert sub.number_of_entries_in_backlog == 2
    assert (await persisted(stack))["properties"] == {"seq": 7}


async def test_mark_delete_past_the_last_entry_is_refused(stack: Any) -> None:
    _ml, sub, p = await filled(stack, 2)
    with pytest.raises(errors.InvalidCursorPositionError):
        await sub.mark_delete(P(p[-1].ledger_id, p[-1].entry_id + 1))


async def test_rewind_reads_again_from_after_mark_delete(stack: Any) -> None:
    _ml, sub, p = await filled(stack, 4)
    await sub.read_entries(10)
    await sub.delete([p[0], p[2]])
    sub.rewind()
    assert [e.position for e in await sub.read_entries(10)] == [p[1], p[3]]


async def test_seek_moves_the_read_position_only(stack: Any) -> None:
    _ml, sub, p = await filled(stack, 4)
    sub.seek(p[2])
    assert [e.position for e in await sub.read_entries(10)] == [p[2], p[3]]
    assert sub.mark_delete_position < p[0]
    assert sub.number_of_entries_in_backlog == 4


async def test_reset_cursor_forgets_acks_and_persists_at_once(make_stack: Any) -> None:
    stack = await make_stack(cursor_position_flush_seconds=3600)
    _ml, sub, p = await filled(stack, 5)
    await sub.delete([p[0], p[1], p[3]])
    await sub.reset_cursor(p[1])
    assert sub.mark_delete_position == p[0]
    assert sub.individually_deleted_ranges == []
    assert [e.position for e in await sub.read_entries(10)] == p[1:]
    stored = await persisted(stack)
    assert stored["markDeletePosition"]["entryId"] == p[0].entry_id
    assert stored["individualDeletedMessages"] == []


async def test_reset_cursor_to_earliest_and_latest(stack: Any) -> None:
    _ml, sub, _p = await filled(stack, 3)
    await sub.reset_cursor(api.LATEST)
    assert sub.number_of_entries_in_backlog == 0
    await sub.reset_cursor(api.EARLIEST)
    assert sub.number_of_entries_in_backlog == 3


async def test_find_newest_matching_searches_across_ledgers(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=4)
    _ml, sub, p = await filled(stack, 11)

    def published_before(limit: int) -> Any:
        return lambda entry: int(entry.data) < limit

    assert await sub.find_newest_matching(published_before(6)) == p[5]
    assert await sub.find_newest_matching(published_before(100)) == p[10]
    assert await sub.find_newest_matching(published_before(0)) is None
    await sub.mark_delete(p[7])
    assert await sub.find_newest_matching(published_before(6), active_only=True) is None
    assert await sub.find_newest_matching(published_before(10), active_only=True) == p[9]


async def test_skip_entries_acknowledges_the_next_unacknowledged_ones(stack: Any) -> None:
    _ml, sub, p = await filled(stack, 8)
    await sub.delete([p[1], p[2]])
    await sub.skip_entries(2)
    assert sub.mark_delete_position == p[3]
    await sub.delete([p[5]])
    await sub.skip_entries(2)
    assert sub.mark_delete_position == p[6]
    await sub.skip_entries(100)
    assert sub.mark_delete_position == p[7]
    assert sub.number_of_entries_in_backlog == 0


async def test_clear_backlog_acknowledges_everything_written(stack: Any) -> None:
    _ml, sub, _p = await filled(stack, 3)
    await sub.clear_backlog()
    assert sub.number_of_entries_in_backlog == 0
    assert not sub.has_more_entries()


async def test_replay_reads_chosen_positions_again_skipping_acknowledged(stack: Any) -> None:
    _ml, sub, p = await filled(stack, 4)
    await sub.read_entries(10)
    await sub.delete([p[1]])
    replayed = await sub.replay_entries([p[2], p[1], p[0]])
    assert [e.position for e in replayed] == [p[0], p[2]]
    assert not sub.has_more_entries()


async def test_non_durable_cursor_starts_inclusive_or_exclusive(stack: Any) -> None:
    ml, _sub, p = await filled(stack, 4)
    inclusive = ml.new_non_durable_cursor(p[1], inclusive=True)
    exclusive = ml.new_non_durable_cursor(p[1])
    earliest = ml.new_non_durable_cursor(api.EARLIEST, "reader-x")
    latest = ml.new_non_durable_cursor(api.LATEST)
    assert [e.position for e in await inclusive.read_entries(10)] == p[1:]
    assert [e.position for e in await exclusive.read_entries(10)] == p[2:]
    assert [e.position for e in await earliest.read_entries(10)] == p
    assert await latest.read_entries(10) == []
    assert not earliest.durable and earliest.name == "reader-x"
    assert [c.name for c in ml.cursors] == ["sub"]
    await earliest.mark_delete(p[3])
    assert not await stack.store.exists(metadata.cursor_path(NAME, "reader-x"))


async def test_closed_cursor_refuses_calls(stack: Any) -> None:
    ml, sub, p = await filled(stack, 1)
    await sub.close()
    with pytest.raises(errors.CursorAlreadyClosedError):
        await sub.read_entries(1)
    with pytest.raises(errors.CursorAlreadyClosedError):
        await sub.mark_delete(p[0])
    reopened = await ml.open_cursor("sub")
    assert reopened is not sub and reopened.read_position == p[0]


async def test_deleting_a_cursor_removes_its_record(stack: Any) -> None:
    ml, _sub, _p = await filled(stack, 1)
    await ml.delete_cursor("sub")
    assert not await stack.store.exists(metadata.cursor_path(NAME, "sub"))
    assert ml.cursors == []
    with pytest.raises(errors.CursorNotFoundError):
        await ml.delete_cursor("sub")


async def test_cursor_names_with_slashes_are_stored_safely(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("a/b c")
    assert await ml.meta.cursor_names() == ["a/b c"]


async def test_positions_are_persisted_debounced_and_flushed_on_close(make_stack: Any) -> None:
    stack = await make_stack(cursor_position_flush_seconds=3600)
    ml, sub, p = await filled(stack, 3)
    created = await stack.store.get(metadata.cursor_path(NAME, "sub"))
    await sub.mark_delete(p[1])
    unchanged = await stack.store.get(metadata.cursor_path(NAME, "sub"))
    assert unchanged.stat.version == created.stat.version
    await ml.close()
    stored = await persisted(stack)
    assert stored["markDeletePosition"]["entryId"] == p[1].entry_id
