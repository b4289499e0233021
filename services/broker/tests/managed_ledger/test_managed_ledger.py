"""ManagedLedger over the real bookie engine and RocksDB metadata: adds, rollover, reads, fencing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pulsar_bookie import errors as bookie_errors
from pulsar_bookie.client import api as client_api
from pulsar_bookie.client import ledger_metadata
from pulsar_broker.managed_ledger import api, errors, metadata

NAME = "public/default/persistent/topic"
WAIT_S = 30


async def add_many(ml: Any, count: int, prefix: str = "m") -> list[api.Position]:
    return [await ml.add_entry(f"{prefix}{i}".encode()) for i in range(count)]


async def stored_ledger_list(stack: Any, name: str = NAME) -> list[int]:
    result = await stack.store.get(metadata.ledger_path(name))
    assert result is not None
    return [info["ledgerId"] for info in json.loads(result.value)["ledgerInfo"]]


async def test_adds_get_consecutive_positions_in_one_ledger(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    positions = await add_many(ml, 5)
    ledger_id = positions[0].ledger_id
    assert positions == [api.Position(ledger_id, i) for i in range(5)]
    assert ml.last_confirmed_entry == positions[-1]
    assert ml.number_of_entries == 5
    assert ml.total_size == sum(len(f"m{i}") for i in range(5))


async def test_concurrent_adds_complete_in_call_order(stack: Any) -> None:
    ml = await stack.factory.open(NAME, stack.factory.default_config)
    done: list[api.Position] = []

    async def add(i: int) -> None:
        done.append(await ml.add_entry(b"%d" % i))

    await asyncio.gather(*(add(i) for i in range(40)))
    assert done == sorted(done)
    entries = [await ml.read_entry(p) for p in done]
    assert [e.data for e in entries] == [b"%d" % i for i in range(40)]


async def test_ledger_rolls_over_after_max_entries_and_keeps_order(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=3)
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("keeps-ledgers", api.InitialPosition.EARLIEST)
    positions = await asyncio.gather(*(ml.add_entry(b"%d" % i) for i in range(7)))
    assert positions == sorted(positions)
    assert [info.entries for info in ml.ledgers] == [3, 3, 1]
    assert [p.entry_id for p in positions] == [0, 1, 2, 0, 1, 2, 0]
    assert await stored_ledger_list(stack) == [info.ledger_id for info in ml.ledgers]
    first = await stack.client.get_ledger_metadata(ml.ledgers[0].ledger_id)
    assert first.is_closed and first.last_entry_id == 2
    assert first.custom_metadata["pulsar/managed-ledger"] == NAME


async def test_ledger_rolls_over_by_size(make_stack: Any) -> None:
    stack = await make_stack(max_size_per_ledger_mbytes=1)
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("keeps-ledgers", api.InitialPosition.EARLIEST)
    big = b"x" * (600 * 1024)
    await add_many_bytes(ml, [big, big, big])
    assert [info.entries for info in ml.ledgers] == [2, 1]


async def add_many_bytes(ml: Any, payloads: list[bytes]) -> list[api.Position]:
    return [await ml.add_entry(p) for p in payloads]


async def test_ledger_rolls_over_once_older_than_the_max_rollover_time(
    make_stack: Any,
) -> None:
    stack = await make_stack(max_ledger_rollover_time_minutes=5)
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("keeps-ledgers", api.InitialPosition.EARLIEST)
    await add_many(ml, 2)
    stack.clock.advance(minutes=4)
    await ml.add_entry(b"still young")
    assert len(ml.ledgers) == 1
    stack.clock.advance(minutes=2)
    await ml.check_ledger_rollover()
    assert [info.entries for info in ml.ledgers] == [3, 0]
    await ml.add_entry(b"in the new ledger")
    assert ml.last_confirmed_entry.ledger_id == ml.ledgers[-1].ledger_id


async def test_an_empty_ledger_is_not_rolled_over_by_age(make_stack: Any) -> None:
    stack = await make_stack(max_ledger_rollover_time_minutes=5)
    ml = await stack.factory.open(NAME)
    stack.clock.advance(minutes=60)
    await ml.check_ledger_rollover()
    assert len(ml.ledgers) == 1


async def test_min_rollover_time_keeps_a_full_ledger_until_it_is_old_enough(
    make_stack: Any,
) -> None:
    stack = await make_stack(max_entries_per_ledger=2, min_ledger_rollover_time_minutes=10)
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("keeps-ledgers", api.InitialPosition.EARLIEST)
    await add_many(ml, 4)
    assert [info.entries for info in ml.ledgers] == [4]
    stack.clock.advance(minutes=10)
    await ml.add_entry(b"after ten minutes")
    assert [info.entries for info in ml.ledgers] == [4, 1]


async def test_entries_are_read_back_across_ledger_boundaries(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    cursor = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    positions = await add_many(ml, 5)
    first = await cursor.read_entries(3)
    rest = await cursor.read_entries(10)
    assert [e.position for e in first + rest] == positions
    assert [e.data for e in first + rest] == [f"m{i}".encode() for i in range(5)]
    assert not cursor.has_more_entries()


async def test_catch_up_reads_come_from_the_bookie_when_the_cache_is_cold(
    make_stack: Any,
) -> None:
    stack = await make_stack(max_entries_per_ledger=2, cache_size_mb=0)
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("keeps-ledgers", api.InitialPosition.EARLIEST)
    positions = await add_many(ml, 5)
    assert len(stack.factory.entry_cache) == 0
    entries = await ml.read_positions(positions)
    assert [e.data for e in entries] == [f"m{i}".encode() for i in range(5)]


async def test_entry_cache_stays_within_its_byte_limit_and_evicts_oldest(
    make_stack: Any,
) -> None:
    stack = await make_stack(cache_size_mb=1)
    ml = await stack.factory.open(NAME)
    payload = b"y" * (300 * 1024)
    positions = await add_many_bytes(ml, [payload] * 6)
    cache = stack.factory.entry_cache
    assert cache.size_bytes <= cache.limit_bytes == 1024 * 1024
    assert len(cache) == 3
    assert not cache.contains(NAME, positions[0])
    assert cache.contains(NAME, positions[-1])
    assert (await ml.read_entry(positions[0])).data == payload


async def test_read_or_wait_wakes_when_an_entry_is_added(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    cursor = await ml.open_cursor("sub")
    waiting = asyncio.ensure_future(cursor.read_entries_or_wait(10))
    while not ml._entry_waiters:
        await asyncio.sleep(0)
    assert not waiting.done()
    position = await ml.add_entry(b"wake up")
    entries = await asyncio.wait_for(waiting, WAIT_S)
    assert [(e.position, e.data) for e in entries] == [(position, b"wake up")]


async def test_cancelling_a_pending_read_returns_nothing(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    cursor = await ml.open_cursor("sub")
    waiting = asyncio.ensure_future(cursor.read_entries_or_wait(10))
    while not ml._entry_waiters:
        await asyncio.sleep(0)
    cursor.cancel_pending_read()
    assert await asyncio.wait_for(waiting, WAIT_S) == []


async def test_terminated_ledger_refuses_adds_and_readers_see_the_end(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    cursor = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    positions = await add_many(ml, 2)
    assert await ml.terminate() == positions[-1]
    assert ml.is_terminated
    with pytest.raises(errors.ManagedLedgerTerminatedError):
        await ml.add_entry(b"late")
    assert len(await cursor.read_entries_or_wait(10)) == 2
    with pytest.raises(errors.NoMoreEntriesToReadError):
        await cursor.read_entries_or_wait(10)


async def test_metadata_changed_underneath_fences_the_managed_ledger(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    await add_many(ml, 2)
    path = metadata.ledger_path(NAME)
    current = await stack.store.get(path)
    await stack.store.put(path, current.value, current.stat.version)
    with pytest.raises(errors.ManagedLedgerFencedError):
        await ml.add_entry(b"needs a rollover")
    assert ml.is_fenced
    with pytest.raises(errors.ManagedLedgerFencedError):
        await ml.add_entry(b"still refused")
    assert len(await stored_ledger_list(stack)) == 1
    # The ledger made for the lost rollover is deleted in the background,
    # as Apache's managed ledger does after a BadVersion.
    async def only_the_first_is_left() -> None:
        while await stack.client._meta.ledger_ids() != [ml.ledgers[0].ledger_id]:
            await asyncio.sleep(0.01)

    await asyncio.wait_for(only_the_first_is_left(), WAIT_S)


async def test_a_second_owner_fences_the_first_writer(make_stack: Any) -> None:
    first = await make_stack()
    old = await first.factory.open(NAME)
    written = await add_many(old, 3)
    # A second broker over the same bookie and metadata takes the topic over.
    from pulsar_broker.managed_ledger import factory

    second = factory.ManagedLedgerFactoryImpl(
        first.store, first.client, first.factory.default_config,
        now_ms=first.clock, maintenance_interval_s=None,
    )
    new = await second.open(NAME)
    old_ledger = await first.client.get_ledger_metadata(written[0].ledger_id)
    assert old_ledger.is_closed and old_ledger.last_entry_id == 2
    with pytest.raises(errors.ManagedLedgerFencedError):
        await old.add_entry(b"from the old owner")
    with pytest.raises(errors.ManagedLedgerFencedError):
        await old.add_entry(b"again")
    position = await new.add_entry(b"from the new owner")
    assert position.ledger_id > written[-1].ledger_id
    cursor = await new.open_cursor("sub", api.InitialPosition.EARLIEST)
    assert [e.data for e in await cursor.read_entries(10)] == [
        b"m0", b"m1", b"m2", b"from the new owner"
    ]
    await old.close()
    await second.shutdown()


async def test_a_failed_write_fails_that_add_and_later_adds_use_a_new_ledger(
    stack: Any,
) -> None:
    ml = await stack.factory.open(NAME)
    await ml.add_entry(b"ok")
    first_ledger = ml.current_ledger_id
    # Fence only the ledger in storage (as a recovering reader would do without taking over
    # the managed ledger's metadata): the writer sees LedgerFencedError.
    await stack.storage.fence_ledger(first_ledger, b"")
    with pytest.raises(errors.ManagedLedgerFencedError):
        await ml.add_entry(b"refused")
    assert ml.is_fenced


async def test_delete_removes_every_ledger_cursor_and_record(make_stack: Any) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    await ml.open_cursor("sub")
    await add_many(ml, 5)
    ledger_ids = [info.ledger_id for info in ml.ledgers]
    await stack.factory.delete(NAME)
    assert not await stack.factory.exists(NAME)
    assert not await stack.store.exists(metadata.cursor_path(NAME, "sub"))
    stored = set(await stack.storage.list_ledgers())
    assert stored.isdisjoint(ledger_ids)
    for ledger_id in ledger_ids:
        assert not await stack.store.exists(ledger_metadata.ledger_path(ledger_id))
    with pytest.raises(errors.ManagedLedgerNotFoundError):
        await stack.factory.delete(NAME)


async def test_closed_managed_ledger_refuses_adds(stack: Any) -> None:
    ml = await stack.factory.open(NAME)
    await ml.close()
    with pytest.raises(errors.ManagedLedgerClosedError):
        await ml.add_entry(b"late")
    reopened = await stack.factory.open(NAME)
    assert reopened is not ml


def test_ledger_metadata_shape_is_unchanged_by_the_client_api() -> None:
    assert client_api.LedgerState.CLOSED.value == "CLOSED"
    assert issubclass(bookie_errors.LedgerFencedError, bookie_errors.BookieError)


async def test_adds_move_to_new_ledgers_and_fail_after_the_add_timeout_when_the_bookie_stops(
    stack: Any,
) -> None:
    ml = await stack.factory.open(NAME)
    await ml.add_entry(b"before")
    first = ml.current_ledger_id
    await stack.storage.close()
    add = asyncio.ensure_future(ml.add_entry(b"refused"))
    # Its ledger breaks: the add is written again on the next ledger, and the next, with
    # a growing pause, instead of failing at once.
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while ml.current_ledger_id < first + 2:
        assert asyncio.get_running_loop().time() < deadline, "no new ledger was tried"
        await asyncio.sleep(0.01)
    assert not add.done()
    stack.clock.advance(seconds=ml.config.add_entry_timeout_seconds)
    with pytest.raises(errors.ManagedLedgerWriteError, match="storage is closed"):
        await asyncio.wait_for(add, WAIT_S)
    assert ml.last_confirmed_entry.entry_id == 0


async def test_adds_waiting_for_a_rollover_fail_cleanly_when_metadata_is_unavailable(
    make_stack: Any,
) -> None:
    stack = await make_stack(max_entries_per_ledger=2)
    ml = await stack.factory.open(NAME)
    await add_many(ml, 2)
    await stack.store.close()
    with pytest.raises(errors.ManagedLedgerWriteError):
        await asyncio.wait_for(ml.add_entry(b"needs a new ledger"), WAIT_S)
    assert not ml.is_fenced
    assert ml.number_of_entries == 2


async def test_opening_while_a_close_is_under_way_waits_for_it_and_opens_anew(stack: Any) -> None:
    """An unload's close and a reconnect's open can cross: the open must not hand out the
    closing instance (it refuses adds), but a fresh one once the close has sealed its ledger
    and flushed its cursors."""
    ml = await stack.factory.open(NAME)
    cursor = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    first = await add_many(ml, 3)
    await cursor.mark_delete(first[1])
    closing = asyncio.ensure_future(ml.close())
    await asyncio.sleep(0)  # the close has started
    reopened = await stack.factory.open(NAME)
    assert closing.done()
    assert reopened is not ml
    position = await reopened.add_entry(b"after")
    assert position.ledger_id != first[0].ledger_id  # the old ledger was sealed
    cursor = await reopened.open_cursor("sub", api.InitialPosition.EARLIEST)
    assert cursor.mark_delete_position == first[1]
    # Concurrent closes share one: both return once it is done.
    closes = [asyncio.ensure_future(reopened.close()) for _ in range(2)]
    await asyncio.sleep(0)
    await asyncio.gather(*closes)
    assert stack.factory.get(NAME) is None
