"""The managed ledger over the replicated ledger client and three real in-process bookies
(network protocol on loopback): quorum writes (E=3, WQ=2, AQ=2), rollover, cursors,
and a reopen that recovers the last ledger through the bookies."""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import AsyncIterator
from typing import Any

from pulsar_bookie.client.replicated import client as replicated_client
from pulsar_bookie.net import client as net_client
from pulsar_bookie.service import testing as bookie_testing
from pulsar_broker import cluster_broker
from pulsar_broker.managed_ledger import api, config, factory
from pulsar_common import clock, testing
from pulsar_common.metadata import rocksdb

NAME = "public/default/persistent/replicated"
QUORUMS = {"ensemble_size": 3, "write_quorum": 2, "ack_quorum": 2}


@contextlib.asynccontextmanager
async def broker_side(
    root: pathlib.Path, *, crash: bool = False, **overrides: Any
) -> AsyncIterator[Any]:
    """A metadata store, the replicated client and a managed-ledger factory over them.

    With crash, the managed ledgers are left as they are at the end (nothing closed).
    """
    store = await rocksdb.RocksdbMetadataStore.open(str(root / "metadata"))
    pool = net_client.BookieClientPool()
    client = replicated_client.ReplicatedLedgerClient(
        store, pool, cluster_broker.RegisteredBookies(store))
    ml_config = config.ManagedLedgerConfig(
        **QUORUMS, min_ledger_rollover_time_minutes=0, cursor_position_flush_seconds=0,
        **overrides,
    )
    ml_factory = factory.ManagedLedgerFactoryImpl(
        store, client, ml_config, now_ms=clock.ManualClock(), maintenance_interval_s=None
    )
    try:
        yield ml_factory
    finally:
        if not crash:
            await ml_factory.shutdown()
        await client.close()
        await pool.close()
        await store.close()


@contextlib.asynccontextmanager
async def three_bookies(root: pathlib.Path) -> AsyncIterator[None]:
    async with contextlib.AsyncExitStack() as stack:
        for i in range(3):
            conf = bookie_testing.local_config(
                root / f"bookie-{i}",
                port=testing.free_port(),
                metadata_url=f"rocksdb:{root / 'metadata'}",
            )
            await stack.enter_async_context(bookie_testing.running_bookie(conf))
        yield


async def test_managed_ledger_writes_and_recovers_through_three_bookies(
    tmp_path: pathlib.Path,
) -> None:
    async with three_bookies(tmp_path):
        async with broker_side(tmp_path, crash=True, max_entries_per_ledger=4) as first:
            ml = await first.open(NAME)
            sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
            written = [await ml.add_entry(b"entry-%d" % i) for i in range(10)]
            assert [info.entries for info in ml.ledgers] == [4, 4, 2]
            await sub.delete([written[0], written[1], written[5]])
            assert [e.position for e in await sub.read_entries(3)] == written[2:5]
            # The broker goes away without closing anything: its last ledger stays open
            # and the next owner recovers it through the bookies (its length unknown).
            last_ledger = ml.current_ledger_id
            sizes = [info.size for info in ml.ledgers]
        async with broker_side(tmp_path, max_entries_per_ledger=4) as second:
            again = await second.open(NAME)
            recovered = [info for info in again.ledgers if info.ledger_id == last_ledger]
            assert [(r.entries, r.size) for r in recovered] == [(2, sizes[-1])]
            resumed = again.cursors[0]
            assert resumed.mark_delete_position == written[1]
            remaining = [e.position for e in await resumed.read_entries(100)]
            assert remaining == [p for i, p in enumerate(written) if i not in (0, 1, 5)]
            last = await second._client.get_ledger_metadata(last_ledger)
            assert last.is_closed and last.last_entry_id == 1
            tail = await again.add_entry(b"after takeover")
            assert tail.ledger_id == again.current_ledger_id > last_ledger
