"""Copying one closed fragment's entries, for one ensemble position, to a new bookie.

Each entry the striping puts on the position is read from a bookie of its
write set (never from the unreachable ones named in `unreachable`; a live
bookie being drained is a source like any other) and added to the new
bookie as a recovery add, which is accepted even where the ledger is fenced.
At most `batch` entries are in flight. Afterwards the first and the last
copied entries are read back from the new bookie and compared byte for byte.
Adds are idempotent on a bookie, so a copy cut short (a worker killed) is
simply done again by the next worker.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Collection

from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import plan
from pulsar_bookie.client import api, bookie_rpc
from pulsar_bookie.storage import api as storage_api


@dataclasses.dataclass(frozen=True)
class CopyResult:
    entries: int
    bytes: int


async def copy_fragment(
    pool: bookie_rpc.BookieRpcPool,
    metadata: api.LedgerMetadata,
    repair: plan.Repair,
    target: types.BookieId,
    unreachable: Collection[types.BookieId],
    *,
    batch: int,
    timeout_s: float,
) -> CopyResult:
    entry_ids = list(plan.entries_at(repair.position, repair.fragment, metadata.ensemble_size,
                                     metadata.write_quorum_size))
    copied_bytes = 0
    first_payload = last_payload = b""
    for start in range(0, len(entry_ids), batch):
        chunk = entry_ids[start:start + batch]
        stored = await asyncio.gather(*(
            _copy_entry(pool, metadata, repair, target, unreachable, entry_id, timeout_s)
            for entry_id in chunk))
        copied_bytes += sum(len(s.payload) for s in stored)
        if start == 0:
            first_payload = stored[0].payload
        last_payload = stored[-1].payload
    if entry_ids:
        await _verify(pool, metadata, target, entry_ids[0], first_payload, timeout_s)
        await _verify(pool, metadata, target, entry_ids[-1], last_payload, timeout_s)
    return CopyResult(len(entry_ids), copied_bytes)


async def _copy_entry(
    pool: bookie_rpc.BookieRpcPool,
    metadata: api.LedgerMetadata,
    repair: plan.Repair,
    target: types.BookieId,
    unreachable: Collection[types.BookieId],
    entry_id: types.EntryId,
    timeout_s: float,
) -> storage_api.StoredEntry:
    stored = await _read_from_replicas(pool, metadata, repair, unreachable, entry_id, timeout_s)
    await asyncio.wait_for(pool.get(target).add_entry(
        metadata.ledger_id, entry_id, stored.last_add_confirmed, stored.payload,
        metadata.password, recovery=True), timeout_s)
    return stored


async def _read_from_replicas(
    pool: bookie_rpc.BookieRpcPool,
    metadata: api.LedgerMetadata,
    repair: plan.Repair,
    unreachable: Collection[types.BookieId],
    entry_id: types.EntryId,
    timeout_s: float,
) -> storage_api.StoredEntry:
    sources = sorted(plan.sources_for(entry_id, repair.fragment, metadata.ensemble_size,
                                      metadata.write_quorum_size, unreachable),
                     key=lambda bookie: bookie == repair.bad)  # the one moved away: last
    failures: list[BaseException] = []
    for source in sources:
        try:
            return await asyncio.wait_for(pool.get(source).read_entry(
                metadata.ledger_id, entry_id, master_key=metadata.password), timeout_s)
        except (errors.BookieError, TimeoutError, OSError) as exc:
            failures.append(exc)
    error = errors.BookieUnavailableError(
        f"ledger {metadata.ledger_id}: entry {entry_id} unreadable from the surviving "
        f"replicas {sources}")
    raise error from (failures[-1] if failures else None)


async def _verify(
    pool: bookie_rpc.BookieRpcPool,
    metadata: api.LedgerMetadata,
    target: types.BookieId,
    entry_id: types.EntryId,
    expected: bytes,
    timeout_s: float,
) -> None:
    stored = await asyncio.wait_for(pool.get(target).read_entry(
        metadata.ledger_id, entry_id, master_key=metadata.password), timeout_s)
    if stored.payload != expected:
        raise errors.BookieError(
            f"ledger {metadata.ledger_id}: entry {entry_id} read back from {target} differs "
            f"from its replicas")
