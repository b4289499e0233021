"""Ledger state: fencing, master keys, deletion, listing; all of it survives restarts and crashes."""

from __future__ import annotations

import pathlib

import pytest
from pulsar_bookie import errors, types
from pulsar_bookie.storage import engine

from .conftest import KEY, MakeConf, freeze_as_crashed, restore_crashed


async def _reopen(make_conf: MakeConf) -> engine.LedgerStorageEngine:
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    return bookie


async def test_a_fenced_ledger_refuses_adds_except_recovery_adds(
    bookie: engine.LedgerStorageEngine,
) -> None:
    await bookie.add_entry(1, 0, -1, b"a", KEY)
    await bookie.add_entry(1, 1, 0, b"b", KEY)
    assert not await bookie.is_fenced(1)
    assert await bookie.fence_ledger(1, KEY) == 0
    assert await bookie.is_fenced(1)
    with pytest.raises(errors.LedgerFencedError):
        await bookie.add_entry(1, 2, 1, b"c", KEY)
    await bookie.add_entry(1, 2, 1, b"c", KEY, recovery=True)
    assert (await bookie.read_entry(1, 2)).payload == b"c"


async def test_fencing_an_unknown_ledger_creates_it_fenced(
    bookie: engine.LedgerStorageEngine,
) -> None:
    assert await bookie.fence_ledger(5, KEY) == types.INVALID_ENTRY_ID
    assert await bookie.is_fenced(5)
    assert await bookie.last_entry_id(5) == types.INVALID_ENTRY_ID
    with pytest.raises(errors.NoSuchEntryError):
        await bookie.read_entry(5, 0)
    with pytest.raises(errors.NoSuchLedgerError):
        await bookie.is_fenced(6)


async def test_fence_survives_a_crash_before_any_flush(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    bookie = await _reopen(make_conf)
    await bookie.add_entry(1, 0, -1, b"a", KEY)
    await bookie.fence_ledger(1, KEY)
    frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    bookie = await _reopen(make_conf)
    assert await bookie.is_fenced(1)
    with pytest.raises(errors.LedgerFencedError):
        await bookie.add_entry(1, 1, 0, b"b", KEY)
    await bookie.close()


async def test_fence_survives_a_clean_restart(make_conf: MakeConf) -> None:
    bookie = await _reopen(make_conf)
    await bookie.add_entry(1, 0, -1, b"a", KEY)
    await bookie.fence_ledger(1, KEY)
    await bookie.close()
    bookie = await _reopen(make_conf)
    assert await bookie.is_fenced(1)
    await bookie.close()


async def test_a_wrong_master_key_is_refused(make_conf: MakeConf, tmp_path: pathlib.Path) -> None:
    bookie = await _reopen(make_conf)
    await bookie.add_entry(1, 0, -1, b"a", KEY)
    with pytest.raises(errors.UnauthorizedAccessError):
        await bookie.add_entry(1, 1, 0, b"b", b"other")
    with pytest.raises(errors.UnauthorizedAccessError):
        await bookie.fence_ledger(1, b"other")
    # The key is journalled with the first add: a crash right after keeps it.
    frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    bookie = await _reopen(make_conf)
    with pytest.raises(errors.UnauthorizedAccessError):
        await bookie.add_entry(1, 1, 0, b"b", b"other")
    await bookie.add_entry(1, 1, 0, b"b", KEY)
    await bookie.close()


async def test_deleted_ledgers_are_gone_and_unlisted(bookie: engine.LedgerStorageEngine) -> None:
    for ledger in (3, 1, 2):
        await bookie.add_entry(ledger, 0, -1, b"x", KEY)
    await bookie.flush()
    await bookie.add_entry(2, 1, 0, b"y", KEY)
    assert await bookie.list_ledgers() == [1, 2, 3]
    await bookie.delete_ledger(2)
    await bookie.delete_ledger(42)  # unknown: nothing to do
    assert await bookie.list_ledgers() == [1, 3]
    with pytest.raises(errors.NoSuchLedgerError):
        await bookie.read_entry(2, 0)
    await bookie.flush()
    assert await bookie.list_ledgers() == [1, 3]


async def test_a_deletion_survives_a_crash_that_replays_the_adds(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    bookie = await _reopen(make_conf)
    await bookie.add_entry(1, 0, -1, b"x", KEY)
    await bookie.add_entry(2, 0, -1, b"y", KEY)
    await bookie.delete_ledger(1)
    frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    bookie = await _reopen(make_conf)
    assert await bookie.list_ledgers() == [2]
    await bookie.close()


async def test_a_closed_engine_refuses_calls(make_conf: MakeConf) -> None:
    bookie = await _reopen(make_conf)
    await bookie.close()
    with pytest.raises(errors.StorageClosedError):
        await bookie.add_entry(1, 0, -1, b"x", KEY)
    with pytest.raises(errors.StorageClosedError):
        await bookie.read_entry(1, 0)


async def test_a_clean_close_checkpoints_so_the_restart_replays_nothing(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    bookie = await _reopen(make_conf)
    for ledger in (1, 2):
        for entry in range(50):
            await bookie.add_entry(ledger, entry, entry - 1, f"{ledger}/{entry}".encode(), KEY)
    await bookie.fence_ledger(2, KEY)
    await bookie.close()
    bookie = await _reopen(make_conf)
    assert bookie.stats().replayed_records == 0
    assert await bookie.list_ledgers() == [1, 2]
    assert await bookie.is_fenced(2) and not await bookie.is_fenced(1)
    for ledger in (1, 2):
        assert await bookie.last_entry_id(ledger) == 49
        assert await bookie.read_last_add_confirmed(ledger) == 48
        for entry in range(50):
            assert (await bookie.read_entry(ledger, entry)).payload == f"{ledger}/{entry}".encode()
    # The same adds after a crash come back through the journal.
    await bookie.add_entry(1, 50, 49, b"late", KEY)
    frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    bookie = await _reopen(make_conf)
    assert bookie.stats().replayed_records >= 1
    assert (await bookie.read_entry(1, 50)).payload == b"late"
    await bookie.close()
