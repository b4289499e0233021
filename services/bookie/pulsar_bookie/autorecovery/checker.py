"""The auditor's periodic replica check (auditorPeriodicCheckInterval), a light one.

For every closed fragment and every bookie of its ensemble, the first and the
last entry the striping puts on that bookie are read from it. A bookie that
answers "no such entry" or "no such ledger" has lost the fragment (a disk
replaced without a new cookie, a bug): the ledger is marked under-replicated
for that bookie. A bookie that does not answer is left to the bookie check,
which notices when its registration is gone.
"""

from __future__ import annotations

import asyncio

from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import plan
from pulsar_bookie.client import api, bookie_rpc


async def bookies_missing_entries(
    pool: bookie_rpc.BookieRpcPool, metadata: api.LedgerMetadata, timeout_s: float
) -> frozenset[types.BookieId]:
    """Bookies of the ledger's closed fragments that lack an entry they should hold."""
    probes: list[tuple[types.BookieId, types.EntryId]] = []
    for fragment in plan.fragment_ranges(metadata):
        if not fragment.closed:
            continue
        for position, bookie in enumerate(fragment.ensemble):
            entry_ids = list(plan.entries_at(position, fragment, metadata.ensemble_size,
                                             metadata.write_quorum_size))
            for entry_id in {entry_ids[0], entry_ids[-1]} if entry_ids else ():
                probes.append((bookie, entry_id))
    answers = await asyncio.gather(*(
        asyncio.wait_for(pool.get(bookie).read_entry(
            metadata.ledger_id, entry_id, master_key=metadata.password), timeout_s)
        for bookie, entry_id in probes), return_exceptions=True)
    return frozenset(
        bookie for (bookie, _), answer in zip(probes, answers)
        if isinstance(answer, errors.NoSuchEntryError | errors.NoSuchLedgerError))
