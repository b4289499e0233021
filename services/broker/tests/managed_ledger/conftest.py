"""Real parts for managed-ledger tests: the bookie engine and RocksDB metadata store in tmp dirs.

Fixtures hand out package objects only (test modules cannot import this file).
`stack` starts one "broker" worth of parts; `restart` stops it and starts
another over the same directories, as a broker restart would.
"""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from pulsar_bookie import config as bookie_config
from pulsar_bookie import types
from pulsar_bookie.client import local
from pulsar_bookie.storage import engine
from pulsar_broker.managed_ledger import clock, config, factory
from pulsar_common.metadata import rocksdb

BOOKIE_ID = types.BookieId("127.0.0.1:3181")

#: Test defaults: no minimum ledger age, cursors persisted on every acknowledgement.
TEST_CONFIG: dict[str, Any] = {
    "min_ledger_rollover_time_minutes": 0,
    "cursor_position_flush_seconds": 0,
    "cache_size_mb": 1,
}


@dataclasses.dataclass
class Stack:
    root: pathlib.Path
    clock: clock.ManualClock
    storage: engine.LedgerStorageEngine
    store: rocksdb.RocksdbMetadataStore
    client: local.LocalLedgerClient
    factory: factory.ManagedLedgerFactoryImpl
    stopped: bool = False

    async def stop(self, *, clean: bool = True) -> None:
        """Stop everything; without clean, managed ledgers are abandoned as in a crash."""
        if self.stopped:
            return
        self.stopped = True
        if clean:
            await self.factory.shutdown()
        await self.client.close()
        await self.store.close()
        await self.storage.close()


async def start_stack(
    root: pathlib.Path, manual_clock: clock.ManualClock, **overrides: Any
) -> Stack:
    storage = engine.LedgerStorageEngine(
        bookie_config.BookieConfig(
            journalDirectory=str(root / "journal"),
            ledgerDirectories=(str(root / "ledgers"),),
            bookieId=BOOKIE_ID,
            dbStorage_writeCacheMaxSizeMb=4,
            flushInterval=3600_000,
            gcWaitTime=3600_000,
        )
    )
    await storage.start()
    store = await rocksdb.RocksdbMetadataStore.open(str(root / "metadata"))
    client = local.LocalLedgerClient(storage, store, BOOKIE_ID, now_ms=manual_clock)
    ml_config = config.ManagedLedgerConfig(**{**TEST_CONFIG, **overrides})
    ml_factory = factory.ManagedLedgerFactoryImpl(
        store, client, ml_config, now_ms=manual_clock, maintenance_interval_s=None
    )
    return Stack(root, manual_clock, storage, store, client, ml_factory)


StartStack = Callable[..., Awaitable[Stack]]


@pytest.fixture
def manual_clock() -> clock.ManualClock:
    return clock.ManualClock()


@pytest.fixture
async def make_stack(
    tmp_path: pathlib.Path, manual_clock: clock.ManualClock
) -> AsyncIterator[StartStack]:
    """Start a stack over tmp_path (or root) with config overrides; all are stopped at the end."""
    started: list[Stack] = []

    async def make(root: pathlib.Path | None = None, **overrides: Any) -> Stack:
        stack = await start_stack(root or tmp_path, manual_clock, **overrides)
        started.append(stack)
        return stack

    yield make
    for stack in reversed(started):
        await stack.stop()


@pytest.fixture
async def stack(make_stack: StartStack) -> Stack:
    return await make_stack()
