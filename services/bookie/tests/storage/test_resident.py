"""Large entries kept in the journal (journalResidentEntryMinBytes): written once, read from the
journal file, and the journal files reclaimed by garbage collection like entry logs."""

from __future__ import annotations

import asyncio
import os
import pathlib

import pytest

from pulsar_bookie import config as bookie_config
from pulsar_bookie.storage import engine, entry_log

from .conftest import KEY, MakeConf, freeze_as_crashed, journal_files, restore_crashed

LARGE = 60_000
SMALL = b"s" * 100


def _large(ledger: int, entry: int) -> bytes:
    return (f"{ledger}:{entry}:".encode() * LARGE)[:LARGE]


async def _add(bookie: engine.LedgerStorageEngine, ledger: int, entries: range, large: bool) -> None:
    await asyncio.gather(
        *(
            bookie.add_entry(ledger, e, e - 1, _large(ledger, e) if large else SMALL, KEY)
            for e in entries
        )
    )


async def _check(bookie: engine.LedgerStorageEngine, ledger: int, entries: range, large: bool
                 ) -> None:
    for e in entries:
        stored = await bookie.read_entry(ledger, e)
        assert stored.payload == (_large(ledger, e) if large else SMALL), (ledger, e)
        assert stored.last_add_confirmed == e - 1


async def _reopen_and_check(bookie: engine.LedgerStorageEngine, conf: bookie_config.BookieConfig,
                            ledger: int, entries: range, large: bool) -> None:
    """Close the engine, start a new one on the same directories, read the entries back."""
    await bookie.close()
    reopened = engine.LedgerStorageEngine(conf)
    await reopened.start()
    await _check(reopened, ledger, entries, large)
    await reopened.close()


def _conf(make_conf: MakeConf, **overrides: object) -> bookie_config.BookieConfig:
    """Journal files of about 1 MB (batches of at most 4 x 128 KB, so files roll often)."""
    return make_conf(journalMaxSizeMB=1, dbStorage_writeCacheMaxSizeMb=64,
                     journalBufferedWritesThreshold=128 * 1024, **overrides)


def _journal_logs(bookie: engine.LedgerStorageEngine) -> list[int]:
    return [log_id for log_id in bookie._usage if entry_log.is_journal_log(log_id)]


async def test_large_entries_are_written_once_and_read_from_the_journal(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    conf = _conf(make_conf, journalResidentEntryMinBytes=32 * 1024)
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    for start in range(0, 60, 20):  # three rounds, so the journal rolls over a few files
        await _add(bookie, 1, range(start, start + 20), large=True)
        await _add(bookie, 2, range(start, start + 20), large=False)
    await bookie.flush()
    # Only the small entries reached an entry log; the journal files stay past the checkpoint.
    assert bookie.entry_log_disk_bytes() < 60 * 200
    assert len(journal_files(tmp_path)) >= 4
    assert len(_journal_logs(bookie)) >= 3
    await _check(bookie, 1, range(60), large=True)
    await _check(bookie, 2, range(60), large=False)
    await bookie.close()

    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    assert bookie.stats().replayed_records == 0
    await _check(bookie, 1, range(60), large=True)
    await _check(bookie, 2, range(60), large=False)
    await bookie.close()


async def test_journal_files_of_deleted_ledgers_are_reclaimed(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    conf = _conf(make_conf)
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    await _add(bookie, 1, range(60), large=True)
    await _add(bookie, 2, range(60), large=False)
    await bookie.flush()
    kept = len(journal_files(tmp_path))
    assert kept >= 4
    await bookie.delete_ledger(1)
    result = await bookie.garbage_collect(0.0)
    journal_logs = [log_id for log_id in result.deleted_logs if entry_log.is_journal_log(log_id)]
    assert len(journal_logs) >= 3 and result.reclaimed_bytes >= 50 * LARGE
    # The checkpoint's own file (and later ones) stay: a restart may replay them.
    assert 1 <= len(journal_files(tmp_path)) <= kept - len(journal_logs)
    assert all(
        entry_log.split_journal_log_id(log_id)[1] >= bookie._marks[0].file_id
        for log_id in _journal_logs(bookie)
    )
    await _check(bookie, 2, range(60), large=False)
    await _reopen_and_check(bookie, conf, 2, range(60), large=False)


async def test_compaction_moves_live_entries_out_of_journal_files(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    conf = _conf(make_conf)
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    # Ledger 1 (live) shares every journal file with ten times as much of ledger 3 (deleted).
    for start in range(0, 60, 6):
        await _add(bookie, 1, range(start // 6, start // 6 + 1), large=True)
        await _add(bookie, 3, range(start, start + 6), large=True)
    await bookie.flush()
    await bookie.delete_ledger(3)
    logs_before = bookie.entry_log_disk_bytes()
    result = await bookie.garbage_collect(0.5)
    compacted = [log_id for log_id in result.compacted_logs if entry_log.is_journal_log(log_id)]
    assert len(compacted) >= 2
    # The live entries were copied to an entry log, then the journal files deleted.
    assert bookie.entry_log_disk_bytes() - logs_before >= len(compacted) * LARGE
    await _check(bookie, 1, range(10), large=True)
    await _reopen_and_check(bookie, conf, 1, range(10), large=True)


async def test_a_crash_after_a_checkpoint_loses_no_resident_entry(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    conf = _conf(make_conf)
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    await _add(bookie, 1, range(40), large=True)
    await bookie.flush()  # entries 0-39 now only in journal files, named by the index
    await _add(bookie, 1, range(40, 50), large=True)  # only in the journal, after the mark
    frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    assert bookie.stats().replayed_records >= 10
    await _check(bookie, 1, range(50), large=True)
    await bookie.close()


def test_the_default_keeps_large_entries_in_the_journal_only_on_the_ledgers_disk(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    shared = make_conf()
    assert shared.journalResidentEntryMinBytes == -1
    assert engine.resident_entry_min_bytes(shared) == engine.RESIDENT_ENTRY_MIN_BYTES_SHARED_DISK
    shm = pathlib.Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("needs /dev/shm on another filesystem than the test's temp dir")
    separate = make_conf(journalDirectory=str(shm / f"journal-{os.getpid()}-{tmp_path.name}"))
    assert engine.resident_entry_min_bytes(separate) == 0
    assert engine.resident_entry_min_bytes(make_conf(journalResidentEntryMinBytes=100)) == 100


async def test_the_threshold_is_on_the_payload_size(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(_conf(make_conf, journalResidentEntryMinBytes=1000))
    await bookie.start()
    await bookie.add_entry(1, 0, -1, b"b" * 999, KEY)
    await bookie.flush()
    assert _journal_logs(bookie) == []  # copied to an entry log
    await bookie.add_entry(1, 1, 0, b"a" * 1000, KEY)
    await bookie.flush()
    assert len(_journal_logs(bookie)) == 1
    assert (await bookie.read_entry(1, 0)).payload == b"b" * 999
    assert (await bookie.read_entry(1, 1)).payload == b"a" * 1000
    await bookie.close()
