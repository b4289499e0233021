"""A journal out of space: its batch fails, appends are refused, and after `recover` it
writes on in a fresh file, losing nothing acknowledged across a crash.

The journal's open file is replaced (dup2) by /dev/full, whose every write fails with
ENOSPC: a real error from the operating system, no root needed.
"""

from __future__ import annotations

import os
import pathlib

import pytest
from pulsar_bookie import errors
from pulsar_bookie.storage import engine, journal

from .conftest import KEY, MakeConf, freeze_as_crashed, restore_crashed


def fill_journal(bookie: engine.LedgerStorageEngine) -> None:
    [only] = bookie._journals
    full = os.open("/dev/full", os.O_WRONLY)
    os.dup2(full, only._fd)
    os.close(full)


def test_only_a_lack_of_space_is_recoverable() -> None:
    assert journal.is_recoverable(OSError(28, "No space left on device"))
    assert not journal.is_recoverable(OSError(5, "Input/output error"))
    assert not journal.is_recoverable(RuntimeError("not an OS error"))


@pytest.mark.parametrize("sync", [True, False], ids=["synced", "unsynced"])
async def test_a_full_journal_refuses_adds_then_writes_again_and_replays_after_a_crash(
    make_conf: MakeConf, tmp_path: pathlib.Path, sync: bool
) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(journalSyncData=sync))
    await bookie.start()
    await bookie.add_entry(1, 0, -1, b"before", KEY)
    fill_journal(bookie)

    with pytest.raises(errors.BookieUnavailableError, match="No space left"):
        await bookie.add_entry(2, 0, -1, b"refused", KEY)  # a new ledger: its key fails too
    assert isinstance(bookie.journal_failure, OSError) and bookie.journal_recoverable
    with pytest.raises(errors.BookieUnavailableError, match="journal failed"):
        await bookie.add_entry(1, 1, 0, b"refused", KEY)

    assert await bookie.recover_journals()
    assert bookie.journal_failure is None
    await bookie.add_entry(2, 0, -1, b"after", KEY)
    await bookie.add_entry(1, 1, 0, b"after", KEY)

    frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    restarted = engine.LedgerStorageEngine(make_conf(journalSyncData=sync))
    await restarted.start()
    try:
        assert (await restarted.read_entry(1, 0)).payload == b"before"
        assert (await restarted.read_entry(1, 1)).payload == b"after"
        assert (await restarted.read_entry(2, 0)).payload == b"after"
        # Ledger 2's master key record failed with the first add; it was journalled again.
        await restarted.add_entry(2, 1, 0, b"next", KEY)
    finally:
        await restarted.close()
