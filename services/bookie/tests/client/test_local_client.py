"""The in-process ledger client over a real bookie engine and a real RocksDB metadata store."""

from __future__ import annotations

import asyncio
import dataclasses
import pathlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from pulsar_bookie import config as bookie_config
from pulsar_bookie import errors, types
from pulsar_bookie.client import api, ledger_metadata, local
from pulsar_bookie.storage import engine
from pulsar_common.metadata import rocksdb

BOOKIE_ID = types.BookieId("127.0.0.1:3181")


def bookie_conf(root: pathlib.Path) -> bookie_config.BookieConfig:
    return bookie_config.BookieConfig(
        journalDirectory=str(root / "journal"),
        ledgerDirectories=(str(root / "ledgers"),),
        bookieId=BOOKIE_ID,
        dbStorage_writeCacheMaxSizeMb=4,
        flushInterval=3600_000,
        gcWaitTime=3600_000,
    )


@dataclass
class Parts:
    """One in-process bookie, one metadata store, and a client over both."""

    root: pathlib.Path
    storage: engine.LedgerStorageEngine
    store: rocksdb.RocksdbMetadataStore
    client: local.LocalLedgerClient

    @classmethod
    async def start(cls, root: pathlib.Path) -> Parts:
        storage = engine.LedgerStorageEngine(bookie_conf(root))
        await storage.start()
        store = await rocksdb.RocksdbMetadataStore.open(str(root / "metadata"))
        return cls(root, storage, store, local.LocalLedgerClient(storage, store, BOOKIE_ID))

    async def stop(self) -> None:
        await self.client.close()
        await self.store.close()
        await self.storage.close()

    async def restart(self) -> Parts:
        await self.stop()
        return await Parts.start(self.root)


@pytest.fixture
async def parts(tmp_path: pathlib.Path) -> AsyncIterator[Parts]:
    started = await Parts.start(tmp_path)
    yield started
    await started.stop()



async def write(handle: api.WriteHandle, count: int, prefix: bytes = b"e") -> list[int]:
    return list(await asyncio.gather(*(handle.append(prefix + b"%d" % i) for i in range(count))))


async def test_appends_get_ids_in_call_order_and_complete_in_order(parts: Parts) -> None:
    handle = await parts.client.create_ledger(1, 1, 1)
    completed: list[int] = []

    async def add(i: int) -> None:
        completed.append(await handle.append(b"x%d" % i))

    await asyncio.gather(*(add(i) for i in range(50)))
    assert completed == list(range(50))
    assert handle.last_add_confirmed == 49
    entries = await handle.read(0, 49)
    assert [e.payload for e in entries] == [b"x%d" % i for i in range(50)]


async def test_appends_after_the_writer_went_idle_continue_the_sequence(parts: Parts) -> None:
    # The writer drops its (empty) pending queue between bursts: ids, LAC and length go on.
    handle = await parts.client.create_ledger(1, 1, 1)
    assert await write(handle, 3) == [0, 1, 2]
    assert await handle.append(b"alone") == 3
    assert await write(handle, 2, b"f") == [4, 5]
    assert handle.last_add_confirmed == 5
    entries = await handle.read(0, 5)
    assert [e.payload for e in entries] == [b"e0", b"e1", b"e2", b"alone", b"f0", b"f1"]
    await handle.close()
    assert handle.metadata.last_entry_id == 5


async def test_new_ledger_metadata_names_the_one_bookie_and_is_open(parts: Parts) -> None:
    handle = await parts.client.create_ledger(1, 1, 1, {"pulsar/managed-ledger": "t"})
    metadata = await parts.client.get_ledger_metadata(handle.ledger_id)
    assert metadata.state is api.LedgerState.OPEN
    assert metadata.ensembles == (api.Fragment(types.EntryId(0), (BOOKIE_ID,)),)
    assert metadata.custom_metadata == {"pulsar/managed-ledger": "t"}
    other = await parts.client.create_ledger(1, 1, 1)
    assert other.ledger_id > handle.ledger_id


async def test_quorums_other_than_one_are_refused_with_one_bookie(parts: Parts) -> None:
    with pytest.raises(errors.BookieError, match="not enough bookies"):
        await parts.client.create_ledger(2, 2, 2)


async def test_close_seals_the_ledger_with_last_entry_and_length(parts: Parts) -> None:
    handle = await parts.client.create_ledger(1, 1, 1)
    await write(handle, 5)
    await handle.close()
    metadata = await parts.client.get_ledger_metadata(handle.ledger_id)
    assert metadata.state is api.LedgerState.CLOSED
    assert metadata.last_entry_id == 4
    assert metadata.length == sum(len(b"e%d" % i) for i in range(5))
    with pytest.raises(errors.LedgerClosedError):
        await handle.append(b"late")


async def test_reads_never_go_beyond_the_last_add_confirmed(parts: Parts) -> None:
    handle = await parts.client.create_ledger(1, 1, 1)
    for i in range(3):
        await handle.append(b"e%d" % i)
    with pytest.raises(errors.NoSuchEntryError):
        await handle.read(0, 3)
    reader = await parts.client.open_ledger(handle.ledger_id, recovery=False)
    # Each add carries the previous LAC, so a reader that did not recover sees 0..1.
    assert reader.last_add_confirmed == 1
    with pytest.raises(errors.NoSuchEntryError):
        await reader.read(2, 2)
    await handle.append(b"more")
    assert await reader.read_last_add_confirmed() == 2
    assert [e.payload for e in await reader.read(0, 2)] == [b"e0", b"e1", b"e2"]


async def test_recovery_fences_the_old_writer_and_closes_at_the_last_entry(parts: Parts) -> None:
    writer = await parts.client.create_ledger(1, 1, 1, password=b"pw")
    await write(writer, 4)
    recovered = await parts.client.open_ledger(writer.ledger_id, recovery=True, password=b"pw")
    assert recovered.last_add_confirmed == 3
    assert recovered.metadata.is_closed
    assert recovered.length == sum(len(b"e%d" % i) for i in range(4))
    for _ in range(2):
        with pytest.raises(errors.LedgerFencedError):
            await writer.append(b"after fence")
    assert [e.payload for e in await recovered.read(0, 3)] == [b"e0", b"e1", b"e2", b"e3"]


async def test_recovery_of_a_ledger_that_never_got_an_entry_closes_it_empty(parts: Parts) -> None:
    writer = await parts.client.create_ledger(1, 1, 1)
    recovered = await parts.client.open_ledger(writer.ledger_id)
    assert recovered.last_add_confirmed == types.INVALID_ENTRY_ID
    assert recovered.metadata.is_closed
    with pytest.raises(errors.LedgerFencedError):
        await writer.append(b"first")


async def test_opening_a_closed_ledger_with_recovery_just_opens_it(parts: Parts) -> None:
    writer = await parts.client.create_ledger(1, 1, 1)
    await write(writer, 2)
    await writer.close()
    before = await parts.store.get(ledger_metadata.ledger_path(writer.ledger_id))
    reader = await parts.client.open_ledger(writer.ledger_id)
    after = await parts.store.get(ledger_metadata.ledger_path(writer.ledger_id))
    assert reader.last_add_confirmed == 1
    assert before is not None and after is not None
    assert before.stat.version == after.stat.version


async def test_writer_closing_after_recovery_at_the_same_entry_is_fine(parts: Parts) -> None:
    writer = await parts.client.create_ledger(1, 1, 1)
    await write(writer, 3)
    await parts.client.open_ledger(writer.ledger_id)
    await writer.close()
    assert (await parts.client.get_ledger_metadata(writer.ledger_id)).last_entry_id == 2


async def test_close_after_a_conflicting_metadata_change_raises_version_error(
    parts: Parts,
) -> None:
    writer = await parts.client.create_ledger(1, 1, 1)
    await write(writer, 3)
    meta = ledger_metadata.LedgerMetadataStore(parts.store)
    current = await meta.read(writer.ledger_id)
    changed = dataclasses.replace(current.metadata, custom_metadata={"someone": "else"})
    await meta.write(changed, current.version)
    with pytest.raises(errors.MetadataVersionError):
        await writer.close()


async def test_wrong_password_is_refused(parts: Parts) -> None:
    writer = await parts.client.create_ledger(1, 1, 1, password=b"right")
    with pytest.raises(errors.UnauthorizedAccessError):
        await parts.client.open_ledger(writer.ledger_id, password=b"wrong")


async def test_delete_removes_data_and_metadata_and_is_idempotent(parts: Parts) -> None:
    writer = await parts.client.create_ledger(1, 1, 1)
    await write(writer, 2)
    await writer.close()
    await parts.client.delete_ledger(writer.ledger_id)
    assert writer.ledger_id not in await parts.storage.list_ledgers()
    assert not await parts.store.exists(ledger_metadata.ledger_path(writer.ledger_id))
    with pytest.raises(errors.NoSuchLedgerError):
        await parts.client.open_ledger(writer.ledger_id)
    await parts.client.delete_ledger(writer.ledger_id)


async def test_a_ledger_its_writer_never_closed_is_recovered_after_a_restart(
    parts: Parts,
) -> None:
    writer = await parts.client.create_ledger(1, 1, 1)
    await write(writer, 6)
    ledger_id = writer.ledger_id
    restarted = await parts.restart()
    try:
        recovered = await restarted.client.open_ledger(ledger_id)
        assert recovered.last_add_confirmed == 5
        assert [e.payload for e in await recovered.read(4, 5)] == [b"e4", b"e5"]
        assert (await restarted.client.get_ledger_metadata(ledger_id)).is_closed
    finally:
        await restarted.stop()


def test_ledger_metadata_survives_a_json_round_trip() -> None:
    metadata = api.LedgerMetadata(
        ledger_id=types.LedgerId(7),
        ensemble_size=3,
        write_quorum_size=2,
        ack_quorum_size=2,
        state=api.LedgerState.IN_RECOVERY,
        last_entry_id=types.EntryId(41),
        length=1234,
        ensembles=(
            api.Fragment(types.EntryId(0), (types.BookieId("a:1"), types.BookieId("b:1"))),
            api.Fragment(types.EntryId(20), (types.BookieId("a:1"), types.BookieId("c:1"))),
        ),
        ctime_ms=99,
        custom_metadata={"k": "v"},
        password=b"\x00secret",
    )
    assert ledger_metadata.from_json(ledger_metadata.to_json(metadata)) == metadata


def test_unreadable_ledger_metadata_is_a_clear_error() -> None:
    with pytest.raises(errors.BookieError, match="unreadable"):
        ledger_metadata.from_json(b'{"ledgerId": 1}')


async def test_closed_client_refuses_calls(parts: Parts) -> None:
    client = local.LocalLedgerClient(parts.storage, parts.store, BOOKIE_ID)
    await client.close()
    with pytest.raises(errors.BookieUnavailableError):
        await client.create_ledger(1, 1, 1)
