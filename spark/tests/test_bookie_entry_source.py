"""BookieEntrySource against real bookies (storage engine + TCP server): reads, failover, limits."""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
import time
from collections.abc import AsyncIterator

import pytest
from pulsar_bookie import config as bookie_config
from pulsar_bookie import types
from pulsar_bookie.client import ledger_metadata
from pulsar_bookie.client.replicated import schedule
from pulsar_bookie.net import client, server
from pulsar_bookie.storage import engine
from pulsar_spark import entries, errors

PASSWORD = b"secret"
LEDGER = types.LedgerId(42)
ENTRIES = 10


async def _bookie(base: pathlib.Path) -> tuple[engine.LedgerStorageEngine, server.BookieServer]:
    storage = engine.LedgerStorageEngine(bookie_config.BookieConfig(
        journalDirectory=str(base / "journal"), ledgerDirectories=(str(base / "ledgers"),),
        dbStorage_writeCacheMaxSizeMb=8, journalSyncData=False,
        flushInterval=3600_000, gcWaitTime=3600_000))
    await storage.start()
    bookie_server = server.BookieServer(storage)
    await bookie_server.start("127.0.0.1", 0)
    return storage, bookie_server


@pytest.fixture
async def bookies(tmp_path: pathlib.Path) \
        -> AsyncIterator[list[tuple[engine.LedgerStorageEngine, server.BookieServer]]]:
    started = [await _bookie(tmp_path / f"bookie{i}") for i in range(2)]
    yield started
    for storage, bookie_server in started:
        await bookie_server.stop(grace_s=5)
        await storage.close()


def _payload(entry_id: int) -> bytes:
    return f"entry {entry_id} ".encode() * (entry_id + 1)


async def _write(ensemble: tuple[types.BookieId, ...], skip: set[tuple[int, int]]) -> None:
    """Entries 0..ENTRIES-1 on both bookies, except (bookie index, entry id) pairs in `skip`."""
    for index, bookie_id in enumerate(ensemble):
        writer = client.BookieClient(bookie_id)
        for entry_id in range(ENTRIES):
            if (index, entry_id) not in skip:
                await writer.add_entry(LEDGER, types.EntryId(entry_id),
                                       types.EntryId(entry_id - 1), _payload(entry_id), PASSWORD)
        await writer.close()


def _location(ensemble: tuple[types.BookieId, ...], last: int) -> entries.LedgerLocation:
    metadata = ledger_metadata.new_open_ledger(LEDGER, (2, 2, 2), ensemble, 0, None, PASSWORD)
    return entries.LedgerLocation(LEDGER, ledger_metadata.to_json(metadata), last)


def _ensemble(bookies: list[tuple[engine.LedgerStorageEngine, server.BookieServer]]) \
        -> tuple[types.BookieId, ...]:
    return tuple(types.BookieId(f"127.0.0.1:{s.port}") for _, s in bookies)


async def _read(location: entries.LedgerLocation, first: int, last: int,
                reads_in_flight_max: int = 4) -> list[bytes]:
    source = entries.BookieEntrySource(reads_in_flight_max)
    try:
        return await asyncio.to_thread(source.read, location, first, last)
    finally:
        await asyncio.to_thread(source.close)


async def test_entries_come_back_in_order_over_several_read_batches(bookies):
    ensemble = _ensemble(bookies)
    await _write(ensemble, set())
    location = _location(ensemble, ENTRIES - 1)
    assert await _read(location, 0, ENTRIES - 1) == [_payload(e) for e in range(ENTRIES)]
    assert await _read(location, 3, 3) == [_payload(3)]


async def test_an_entry_its_first_bookie_lacks_is_read_from_the_other(bookies):
    ensemble = _ensemble(bookies)
    await _write(ensemble, {(schedule.write_set(e, 2, 2)[0], e) for e in (2, 5)})
    location = _location(ensemble, ENTRIES - 1)
    assert await _read(location, 0, ENTRIES - 1) == [_payload(e) for e in range(ENTRIES)]


async def test_a_stopped_bookie_is_read_around(bookies):
    ensemble = _ensemble(bookies)
    await _write(ensemble, set())
    await bookies[0][1].stop(grace_s=5)
    location = _location(ensemble, ENTRIES - 1)
    assert await _read(location, 0, ENTRIES - 1) == [_payload(e) for e in range(ENTRIES)]


async def test_entries_past_the_readable_end_or_on_no_bookie_are_errors(bookies):
    ensemble = _ensemble(bookies)
    await _write(ensemble, {(0, 4), (1, 4)})
    with pytest.raises(errors.EntryReadError, match="entries 0..5"):
        await _read(_location(ensemble, 4), 0, 5)
    with pytest.raises(errors.EntryReadError, match="entries 3..6"):
        await _read(_location(ensemble, ENTRIES - 1), 3, 6)


async def test_entries_of_a_bookie_that_never_answers_come_from_the_other(bookies):
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # takes requests, answers none
        writer.close()

    mute = await asyncio.start_server(silent, "127.0.0.1", 0)
    try:
        port = mute.sockets[0].getsockname()[1]
        ensemble = (types.BookieId(f"127.0.0.1:{port}"), _ensemble(bookies)[1])
        writer = client.BookieClient(ensemble[1])
        for entry_id in range(4):
            await writer.add_entry(LEDGER, types.EntryId(entry_id), types.EntryId(entry_id - 1),
                                   _payload(entry_id), PASSWORD)
        await writer.close()
        source = entries.BookieEntrySource()
        source._settings = dataclasses.replace(source._settings, speculative_read_timeout_ms=200)
        try:
            read = await asyncio.to_thread(source.read, _location(ensemble, 3), 0, 3)
        finally:
            await asyncio.to_thread(source.close)
        assert read == [_payload(e) for e in range(4)]
    finally:
        mute.close()


async def test_a_read_submitted_then_left_waiting_past_the_timeouts_still_completes(bookies):
    ensemble = _ensemble(bookies)
    await _write(ensemble, set())
    location = _location(ensemble, ENTRIES - 1)

    def submit_decode_then_collect() -> tuple[list[bytes], list[bytes]]:
        source = entries.BookieEntrySource(4)
        source._settings = dataclasses.replace(source._settings, speculative_read_timeout_ms=50)
        try:
            first = source.submit(location, 0, 4)
            second = source.submit(location, 5, ENTRIES - 1)
            time.sleep(0.3)  # the caller decodes; the loop does not run meanwhile
            return first.result(), second.result()
        finally:
            source.close()

    first, second = await asyncio.to_thread(submit_decode_then_collect)
    assert first + second == [_payload(e) for e in range(ENTRIES)]


async def test_closing_with_a_cancelled_read_in_flight_returns_and_reads_go_on(bookies):
    """close() settles a read whose requests are out (no error, no hang); a new source reads."""
    ensemble = _ensemble(bookies)
    await _write(ensemble, set())
    location = _location(ensemble, ENTRIES - 1)

    def submit_cancel_close() -> None:
        source = entries.BookieEntrySource()
        try:
            source.submit(location, 0, ENTRIES - 1).cancel()
        finally:
            source.close()

    await asyncio.wait_for(asyncio.to_thread(submit_cancel_close), 30)

    def read_again() -> int:
        source = entries.BookieEntrySource()
        try:
            return len(source.read(location, 0, ENTRIES - 1))
        finally:
            source.close()

    assert await asyncio.to_thread(read_again) == ENTRIES


async def test_the_speculative_timeout_counts_only_while_the_loop_runs(bookies, monkeypatch):
    """A caller that decodes for longer than the speculative timeout does not get its entries
    read twice: the answers waiting in the socket buffers are taken first."""
    asked: list[int] = []
    read_entry = client.BookieClient.read_entry

    async def counted(self: client.BookieClient, *args: object, **kwargs: object) -> object:
        asked.append(int(args[1]))  # type: ignore[call-overload]
        return await read_entry(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(client.BookieClient, "read_entry", counted)
    ensemble = _ensemble(bookies)
    big = [bytes([e]) * 200_000 for e in range(ENTRIES)]
    for bookie_id in ensemble:
        writer = client.BookieClient(bookie_id)
        for entry_id, payload in enumerate(big):
            await writer.add_entry(LEDGER, types.EntryId(entry_id), types.EntryId(entry_id - 1),
                                   payload, PASSWORD)
        await writer.close()
    location = _location(ensemble, ENTRIES - 1)

    def submit_decode_then_collect() -> list[bytes]:
        source = entries.BookieEntrySource()
        source._settings = dataclasses.replace(source._settings, speculative_read_timeout_ms=100)
        try:
            first = source.submit(location, 0, ENTRIES - 1)
            time.sleep(0.5)  # the caller decodes; the loop does not run meanwhile
            return first.result()
        finally:
            source.close()

    assert await asyncio.to_thread(submit_decode_then_collect) == big
    assert sorted(asked) == list(range(ENTRIES))
