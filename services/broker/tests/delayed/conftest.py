"""Standalones for the delayed-delivery tests: a 100 ms tick keeps them fast.

The module-scoped `standalone` overrides the shared one, so the shared `client` connects to it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pulsar_broker import testing as broker_testing

#: delayedDeliveryTickTimeMillis of the test standalones.
TICK_MS = 100


@pytest.fixture(scope="module")
def standalone(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[broker_testing.StandaloneProcess]:
    data_dir = tmp_path_factory.mktemp("delayed") / "data"
    process = broker_testing.StandaloneProcess(
        data_dir, {"journalSyncData": "false", "delayedDeliveryTickTimeMillis": str(TICK_MS)})
    process.start()
    yield process
    process.stop()


# In-process parts for dispatcher tests: the bookie engine and RocksDB metadata in tmp dirs.

@pytest.fixture
async def managed_ledger_factory(tmp_path):  # type: ignore[no-untyped-def]
    from pulsar_bookie import config as bookie_config
    from pulsar_bookie import types
    from pulsar_bookie.client import local
    from pulsar_bookie.storage import engine
    from pulsar_broker.managed_ledger import clock, config, factory
    from pulsar_common.metadata import rocksdb

    bookie_id = types.BookieId("127.0.0.1:3181")
    storage = engine.LedgerStorageEngine(bookie_config.BookieConfig(
        journalDirectory=str(tmp_path / "journal"), ledgerDirectories=(str(tmp_path / "ledgers"),),
        bookieId=bookie_id, dbStorage_writeCacheMaxSizeMb=4, flushInterval=3600_000,
        gcWaitTime=3600_000))
    await storage.start()
    store = await rocksdb.RocksdbMetadataStore.open(str(tmp_path / "metadata"))
    now = clock.ManualClock()
    ledger_client = local.LocalLedgerClient(storage, store, bookie_id, now_ms=now)
    ml_factory = factory.ManagedLedgerFactoryImpl(
        store, ledger_client,
        config.ManagedLedgerConfig(min_ledger_rollover_time_minutes=0,
                                   cursor_position_flush_seconds=0, cache_size_mb=1),
        now_ms=now, maintenance_interval_s=None)
    yield ml_factory
    await ml_factory.shutdown()
    await ledger_client.close()
    await store.close()
    await storage.close()
