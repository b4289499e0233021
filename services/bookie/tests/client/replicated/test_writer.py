"""The replicated writer's handling of an add that fails in a way no bookie error names."""

from __future__ import annotations

import asyncio
import random

import pytest
from pulsar_bookie import errors, types
from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.testing import ledger_sim


class BrokenRpc(ledger_sim.SimRpc):
    def add_entry_future(self, ledger_id: types.LedgerId, entry_id: types.EntryId,
                         last_add_confirmed: types.EntryId, payload: bytes, master_key: bytes,
                         timeout_s: float) -> asyncio.Future[None]:
        raise RuntimeError("a bug in the transport")


class BrokenPool(ledger_sim.SimPool):
    def get(self, bookie_id: types.BookieId) -> ledger_sim.SimRpc:
        return BrokenRpc(self._network, bookie_id)


async def test_an_unforeseen_add_failure_fails_the_ledgers_adds_instead_of_leaving_them_pending(
) -> None:
    bookies = [ledger_sim.SimBookie(types.BookieId(f"bookie-{i}:3181")) for i in range(3)]
    network = ledger_sim.SimNetwork(random.Random(1), bookies, ledger_sim.Faults(0, 0, 0, 0, 0))
    ledgers = replicated.ReplicatedLedgerClient(
        ledger_sim.SimMetadataStore(), BrokenPool(network), ledger_sim.SimSource(bookies),
        rng=random.Random(1))
    writer = await ledgers.create_ledger(3, 2, 2)
    added = writer.append_future(b"entry")
    with pytest.raises(errors.BookieError, match="a bug in the transport"):
        await asyncio.wait_for(added, 10)
    with pytest.raises(errors.BookieError):
        writer.append_future(b"next")
