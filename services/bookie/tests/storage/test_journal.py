"""The journal: group commit, optional sync, torn tails after a crash, file trimming."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import pathlib
import threading

import pytest
from pulsar_bookie import errors
from pulsar_bookie.storage import engine, journal, records

from .conftest import KEY, MakeConf, freeze_as_crashed, journal_files, restore_crashed


async def test_many_concurrent_adds_share_few_fsyncs(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(journalMaxGroupWaitMSec=2))
    await bookie.start()
    before = bookie.stats()
    await asyncio.gather(*(bookie.add_entry(1, e, e - 1, b"x" * 100, KEY) for e in range(2000)))
    stats = bookie.stats()
    fsyncs = stats.journal_fsyncs - before.journal_fsyncs
    assert stats.adds == 2000
    assert 1 <= fsyncs < 2000 // 4
    await bookie.close()


async def test_sequential_adds_each_wait_for_their_own_fsync(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(journalMaxGroupWaitMSec=0))
    await bookie.start()
    before = bookie.stats().journal_fsyncs
    for e in range(20):
        await bookie.add_entry(1, e, e - 1, b"x", KEY)
    # The first add also carries the ledger's master key record: same batch.
    assert bookie.stats().journal_fsyncs - before == 20
    await bookie.close()


def _hold_fdatasync(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Make every fdatasync wait for the returned `release` event; `in_sync` is set once
    the journal thread is inside one."""
    real_fdatasync = os.fdatasync
    in_sync = threading.Event()
    release = threading.Event()

    def held_fdatasync(fd: int) -> None:
        in_sync.set()
        assert release.wait(30)
        real_fdatasync(fd)

    monkeypatch.setattr(os, "fdatasync", held_fdatasync)
    return in_sync, release


async def test_a_lone_add_is_synced_at_once_without_the_group_wait(make_conf: MakeConf) -> None:
    # A group wait far longer than the test may take: only adds that arrive together wait.
    bookie = engine.LedgerStorageEngine(make_conf(journalMaxGroupWaitMSec=60_000))
    await bookie.start()
    before = bookie.stats().journal_fsyncs
    for e in range(5):
        await asyncio.wait_for(bookie.add_entry(1, e, e - 1, b"x", KEY), timeout=20)
    assert bookie.stats().journal_fsyncs - before == 5
    await bookie.close()


@pytest.mark.parametrize("companion", ["checkpoint mark", "new ledger's master key"])
async def test_a_lone_add_beside_a_record_that_is_no_add_does_not_wait_for_company(
    make_conf: MakeConf, monkeypatch: pytest.MonkeyPatch, companion: str
) -> None:
    # The flush asks each journal for a log mark now and then, and a ledger's first add
    # journals the ledger's master key just before it. Either, queued beside a lone add
    # while the journal was busy, once counted as company: the add then waited for the
    # whole group wait (seen as a 20 s timeout of the test above on a loaded machine).
    bookie = engine.LedgerStorageEngine(make_conf(journalMaxGroupWaitMSec=60_000))
    await bookie.start()
    in_sync, release = _hold_fdatasync(monkeypatch)
    first = asyncio.create_task(bookie.add_entry(1, 0, -1, b"first", KEY))
    assert await asyncio.to_thread(in_sync.wait, 30)
    # While the first add's batch syncs, one add and one other record queue up behind it,
    # so the journal is busy when it takes them, with nothing else coming.
    # (ledger, entry, last confirmed): the next entry of ledger 1, or a new ledger's first,
    # whose master key record is journalled just before it.
    lone = (1, 1, 0) if companion == "checkpoint mark" else (2, 0, -1)
    waiting = [asyncio.create_task(bookie.add_entry(*lone, b"lone", KEY))]
    for _ in range(5):
        await asyncio.sleep(0)
    if companion == "checkpoint mark":
        waiting.append(bookie._journals[0].request_mark())
    release.set()
    await asyncio.wait_for(first, 30)
    await asyncio.wait_for(asyncio.gather(*waiting), timeout=20)
    await bookie.close()


async def test_journal_sync_data_false_never_fsyncs(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(journalSyncData=False))
    await bookie.start()
    await asyncio.gather(*(bookie.add_entry(1, e, e - 1, b"x" * 100, KEY) for e in range(500)))
    assert bookie.stats().journal_fsyncs == 0
    assert (await bookie.read_entry(1, 499)).payload == b"x" * 100
    await bookie.close()


async def test_a_small_journal_queue_bounds_every_batch(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(journalQueueSize=8, journalMaxGroupWaitMSec=5))
    await bookie.start()
    before = bookie.stats().journal_batches
    await asyncio.gather(*(bookie.add_entry(1, e, e - 1, b"x", KEY) for e in range(400)))
    assert bookie.stats().journal_batches - before >= 400 // 8
    await bookie.close()


async def test_journal_files_before_the_checkpoint_are_deleted(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    # Every entry copied to entry logs (large ones would stay in the journal: test_resident).
    bookie = engine.LedgerStorageEngine(
        make_conf(journalMaxSizeMB=1, dbStorage_writeCacheMaxSizeMb=64,
                  journalResidentEntryMinBytes=0)
    )
    await bookie.start()
    payload = b"p" * 60_000
    for batch in range(4):
        await asyncio.gather(
            *(
                bookie.add_entry(1, e, e - 1, payload, KEY)
                for e in range(batch * 20, batch * 20 + 20)
            )
        )
    assert len(journal_files(tmp_path)) >= 4
    await bookie.flush()
    assert len(journal_files(tmp_path)) == 1
    assert (await bookie.read_entry(1, 79)).payload == payload
    await bookie.close()


async def _crash_with_entries(
    make_conf: MakeConf, tmp_path: pathlib.Path, count: int
) -> pathlib.Path:
    """Acknowledged adds only in the journal, then a simulated crash; returns the journal
    file, cut to end at its last record (without a direct write's zero padding)."""
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    for e in range(count):
        await bookie.add_entry(1, e, e - 1, bytes([e]) * 300, KEY)
    frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    path = journal_files(tmp_path)[-1]
    _truncate(path, _records_end(path))
    return path


def _records_end(path: pathlib.Path) -> int:
    result = records.ScanResult()
    for _ in records.scan(path.read_bytes(), 0, result):
        pass
    assert not result.torn
    return result.valid_end


def _truncate(path: pathlib.Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def _overwrite_tail(path: pathlib.Path, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(-len(data), 2)
        f.write(data)


def _append(path: pathlib.Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


async def _check_first_nine_survive(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    for e in range(9):
        assert (await bookie.read_entry(1, e)).payload == bytes([e]) * 300
    with pytest.raises(errors.NoSuchEntryError):
        await bookie.read_entry(1, 9)
    assert await bookie.last_entry_id(1) == 8
    await bookie.add_entry(1, 9, 8, b"new", KEY)
    await bookie.add_entry(1, 10, 9, b"newer", KEY)
    await bookie.close()
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    assert (await bookie.read_entry(1, 9)).payload == b"new"
    assert (await bookie.read_entry(1, 10)).payload == b"newer"
    assert (await bookie.read_entry(1, 8)).payload == bytes([8]) * 300
    await bookie.close()


async def test_journal_cut_mid_record_is_truncated_and_earlier_entries_survive(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    path = await _crash_with_entries(make_conf, tmp_path, 10)
    record_size = len(records.add_entry_record(1, 9, 8, bytes([9]) * 300))
    _truncate(path, path.stat().st_size - record_size // 2)
    await _check_first_nine_survive(make_conf)


async def test_journal_with_corrupt_last_bytes_is_truncated_and_earlier_entries_survive(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    path = await _crash_with_entries(make_conf, tmp_path, 10)
    _overwrite_tail(path, b"\xde\xad\xbe")
    await _check_first_nine_survive(make_conf)


async def test_zeroed_space_after_the_last_record_is_ignored(
    make_conf: MakeConf, tmp_path: pathlib.Path
) -> None:
    path = await _crash_with_entries(make_conf, tmp_path, 10)
    _append(path, bytes(4096))
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    for e in range(10):
        assert (await bookie.read_entry(1, e)).payload == bytes([e]) * 300
    await bookie.close()


async def test_adds_complete_only_after_fdatasync_and_the_loop_keeps_taking_adds_meanwhile(
    make_conf: MakeConf, monkeypatch: pytest.MonkeyPatch
) -> None:
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    in_sync, release = _hold_fdatasync(monkeypatch)
    first = asyncio.create_task(bookie.add_entry(1, 0, -1, b"first", KEY))
    assert await asyncio.to_thread(in_sync.wait, 30)
    # The journal thread is inside fdatasync: the loop still takes adds, none completes.
    more = [asyncio.create_task(bookie.add_entry(1, e, e - 1, b"more", KEY)) for e in range(1, 101)]
    for _ in range(20):
        await asyncio.sleep(0)
    assert not first.done() and not any(task.done() for task in more)
    assert bookie.stats().adds == 101
    fsyncs = bookie.stats().journal_fsyncs
    release.set()
    await asyncio.wait_for(asyncio.gather(first, *more), 30)
    # The hundred adds that queued during the sync shared few syncs.
    assert bookie.stats().journal_fsyncs - fsyncs <= 5
    await bookie.close()


def test_write_all_writes_every_buffer_in_order_across_iov_max_and_short_writes(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    buffers = [bytes([n % 251]) * (1 + n % 7) for n in range(3 * journal.IOV_MAX + 5)]
    real_writev = os.writev
    calls = []

    def short_writev(fd: int, chunk: list[bytes]) -> int:
        calls.append(len(chunk))
        # Every other call stops part-way through its second buffer, as a filling disk may.
        if len(calls) % 2 and len(chunk) > 1:
            return real_writev(fd, [chunk[0], memoryview(chunk[1])[: len(chunk[1]) // 2]])
        return real_writev(fd, chunk)

    monkeypatch.setattr(journal.os, "writev", short_writev)
    fd = os.open(tmp_path / "f", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        journal.write_all(fd, buffers)
    finally:
        os.close(fd)
    assert (tmp_path / "f").read_bytes() == b"".join(buffers)
    assert max(calls) <= journal.IOV_MAX


async def test_an_add_journals_its_payload_object_itself_not_a_copy(make_conf: MakeConf) -> None:
    # Through the page cache (direct writes copy into their aligned buffer by design).
    bookie = engine.LedgerStorageEngine(make_conf(journalDirectWrites=False))
    await bookie.start()
    written: list[object] = []
    real_write_all = journal.write_all

    def spy(fd: int, buffers: list[bytes]) -> None:
        written.extend(buffers)
        real_write_all(fd, buffers)

    payload = os.urandom(64 * 1024)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(journal, "write_all", spy)
        await bookie.add_entry(1, 0, -1, payload, KEY)
    assert any(buffer is payload for buffer in written)
    assert (await bookie.read_entry(1, 0)).payload == payload
    await bookie.close()


async def test_records_queued_behind_a_full_batch_share_its_sync(make_conf: MakeConf) -> None:
    bookie = engine.LedgerStorageEngine(make_conf(journalBufferedWritesThreshold=64 * 1024))
    await bookie.start()
    before = bookie.stats().journal_fsyncs
    payload = b"q" * 60_000
    await asyncio.gather(*(bookie.add_entry(1, e, e - 1, payload, KEY) for e in range(64)))
    # 3.8 MB: 60 syncs at one per 64 KiB batch; grouped, at most 4 batches' worth per sync.
    syncs = bookie.stats().journal_fsyncs - before
    assert syncs <= 64 * 60_000 // (4 * 64 * 1024) + 3, syncs
    await _check_all(bookie, payload)
    await bookie.close()


async def _check_all(bookie: engine.LedgerStorageEngine, payload: bytes) -> None:
    for e in range(64):
        assert (await bookie.read_entry(1, e)).payload == payload


_DIRECT_SIZES = [1, 300, 4000, 4100, 150_000, 7, 65_536 - 30, 8192, 12]


async def test_direct_writes_replay_every_record_and_their_padding_is_no_torn_tail(
    make_conf: MakeConf, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A small staging buffer, so that the 150 KB entry goes through it in turns.
    monkeypatch.setattr(journal, "DIRECT_WRITE_BUFFER_BYTES", 64 * 1024)
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    payloads = {e: os.urandom(size) for e, size in enumerate(_DIRECT_SIZES)}
    for e, payload in payloads.items():
        # One batch each: every batch starts by writing the previous one's last block again.
        await bookie.add_entry(1, e, e - 1, payload, KEY)
    more = {e: os.urandom(1 + e * 997 % 20_000) for e in range(len(payloads), 60)}
    await asyncio.gather(*(bookie.add_entry(1, e, e - 1, p, KEY) for e, p in more.items()))
    payloads |= more
    frozen = freeze_as_crashed(tmp_path)
    await bookie.close()
    restore_crashed(tmp_path, frozen)
    path = journal_files(tmp_path)[-1]
    size = path.stat().st_size
    # Written in whole blocks: the last one padded past the last record.
    assert size % records.DIRECT_WRITE_ALIGNMENT == 0
    assert _records_end(path) < size

    bookie = engine.LedgerStorageEngine(make_conf())
    with caplog.at_level(logging.WARNING, logger=journal.__name__):
        await bookie.start()
    assert "torn tail" not in caplog.text  # the padding is not taken for one
    for e, payload in payloads.items():
        assert (await bookie.read_entry(1, e)).payload == payload
    assert bookie.stats().replayed_records >= len(payloads)
    await bookie.close()


def _refusing_o_direct_open(path: str, flags: int, mode: int = 0o777) -> int:
    if flags & os.O_DIRECT:
        raise OSError(errno.EINVAL, "Invalid argument", path)
    return _REAL_OPEN(path, flags, mode)


def _refusing_pwrite(fd: int, data: object, offset: int) -> int:
    raise OSError(errno.EINVAL, "Invalid argument")


_REAL_OPEN = os.open


# A filesystem may refuse O_DIRECT at open, or open with it and then refuse the writes.
@pytest.mark.parametrize("refused", [("open", _refusing_o_direct_open),
                                     ("pwrite", _refusing_pwrite)], ids=["open", "write"])
async def test_a_filesystem_refusing_o_direct_gets_page_cache_writes(
    make_conf: MakeConf, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
    refused: tuple[str, object],
) -> None:
    monkeypatch.setattr(journal.os, *refused)
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    await asyncio.gather(*(bookie.add_entry(1, e, e - 1, b"y" * 333, KEY) for e in range(30)))
    path = journal_files(tmp_path)[-1]
    assert path.stat().st_size == _records_end(path)  # appended, no padding
    await bookie.close()
    monkeypatch.undo()
    bookie = engine.LedgerStorageEngine(make_conf())
    await bookie.start()
    assert (await bookie.read_entry(1, 29)).payload == b"y" * 333
    await bookie.close()
