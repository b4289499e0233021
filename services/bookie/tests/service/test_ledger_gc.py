"""A bookie deletes the ledgers whose metadata a ledger client removed."""

from __future__ import annotations

from pulsar_common.metadata import factory

from pulsar_bookie import types
from pulsar_bookie.client import ledger_metadata
from pulsar_bookie.service import ledger_gc, testing
from pulsar_bookie.storage import engine


async def test_ledgers_without_metadata_are_deleted_and_others_kept(tmp_path):
    store = await factory.create_store(f"rocksdb:{tmp_path / 'metadata'}")
    storage = engine.LedgerStorageEngine(testing.local_config(tmp_path / "bookie", sync=False))
    await storage.start()
    try:
        for ledger in (1, 2, 3):
            await storage.add_entry(types.LedgerId(ledger), types.EntryId(0),
                                    types.INVALID_ENTRY_ID, b"data", b"")
        await store.put(ledger_metadata.ledger_path(1), b"{}")
        await store.put(ledger_metadata.ledger_path(3), b"{}")
        deleted = await ledger_gc.delete_orphaned_ledgers(storage, store)
        assert deleted == [2]
        assert await storage.list_ledgers() == [1, 3]
        assert await ledger_gc.delete_orphaned_ledgers(storage, store) == []
    finally:
        await storage.close()
        await store.close()
