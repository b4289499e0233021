"""Standalones for the delayed-delivery tests: a 100 ms tick keeps them fast.

The module-scoped `standalone` overrides the shared one, so the shared `client` connects to it.
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Iterator

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import factory as ml_factory
from pulsar_common import clock

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
async def managed_ledger_factory(
    tmp_path: pathlib.Path,
) -> AsyncIterator[ml_factory.ManagedLedgerFactoryImpl]:
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, clock.ManualClock())
    yield stack.factory
    await stack.stop()
