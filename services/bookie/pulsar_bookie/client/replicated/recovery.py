"""Recovering an open ledger whose writer may be gone: fence, find the tail, close.

1. Mark the ledger IN_RECOVERY (CAS) and fence it on its last ensemble; fencing
   is complete once the replies cover every ack quorum, and the highest LAC
   among them is a lower bound of what the writer got acknowledged.
2. Read forward from LAC+1 with recovery reads, which fence too (a writer that
   missed the fence still cannot complete an add afterwards). An entry found on
   any bookie is recovered; it is absent only when WQ-AQ+1 bookies of its
   write set say they do not have it. Anything else is retried, never guessed.
3. Write the recovered entries to their whole write set, then close the ledger
   at the last recovered entry by CAS. If another client closed it first, its
   close stands.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from pulsar_bookie import errors, types
from pulsar_bookie.client import api, bookie_rpc, ledger_metadata
from pulsar_bookie.client.replicated import schedule
from pulsar_bookie.client.replicated.reader import ReplicatedReadHandle
from pulsar_bookie.client.replicated.settings import ClientSettings
from pulsar_bookie.storage import api as storage_api

log = logging.getLogger(__name__)

#: Length of a ledger closed by recovery: the bytes before the recovered tail are not
#: known without reading every entry, so they are not counted.
LENGTH_UNKNOWN = -1
RECOVERY_ATTEMPTS_MAX = 20


async def recover(
    versioned: ledger_metadata.VersionedMetadata,
    meta: ledger_metadata.LedgerMetadataStore,
    pool: bookie_rpc.BookieRpcPool,
    settings: ClientSettings,
) -> ledger_metadata.VersionedMetadata:
    for _ in range(RECOVERY_ATTEMPTS_MAX):
        metadata = versioned.metadata
        if metadata.is_closed:
            return versioned
        try:
            if metadata.state is api.LedgerState.OPEN:
                versioned = await meta.write(
                    dataclasses.replace(metadata, state=api.LedgerState.IN_RECOVERY),
                    versioned.version)
            handle = ReplicatedReadHandle(versioned.metadata, pool, settings,
                                          types.INVALID_ENTRY_ID)
            lac = await fence(handle, settings)
            last = await recover_tail(handle, lac, settings)
            sealed = dataclasses.replace(
                versioned.metadata, state=api.LedgerState.CLOSED, last_entry_id=last,
                length=LENGTH_UNKNOWN)
            closed = await meta.write(sealed, versioned.version)
            log.info("ledger %s recovered and closed at entry %s", metadata.ledger_id, last)
            return closed
        except errors.MetadataVersionError:
            versioned = await meta.read(metadata.ledger_id)
    raise errors.MetadataVersionError(
        f"ledger {versioned.metadata.ledger_id}: metadata kept changing during recovery")


async def fence(handle: ReplicatedReadHandle, settings: ClientSettings) -> types.EntryId:
    """Fence the last ensemble until the replies cover every ack quorum; the highest LAC."""
    metadata = handle.metadata
    ensemble = metadata.ensembles[-1].ensemble
    timeout_s = settings.read_entry_timeout_ms / 1000
    replied: dict[int, types.EntryId] = {}
    for attempt in range(settings.recovery_read_retry_max):
        missing = [i for i in range(len(ensemble)) if i not in replied]
        answers = await asyncio.gather(
            *(asyncio.wait_for(handle.pool.get(ensemble[i]).fence_ledger(
                metadata.ledger_id, metadata.password), timeout_s) for i in missing),
            return_exceptions=True)
        for index, answer in zip(missing, answers):
            if isinstance(answer, int):
                replied[index] = types.EntryId(answer)
            elif isinstance(answer, errors.UnauthorizedAccessError):
                raise answer
        if schedule.covers_every_ack_quorum(replied, metadata.ensemble_size,
                                            metadata.write_quorum_size,
                                            metadata.ack_quorum_size):
            return max(replied.values(), default=types.INVALID_ENTRY_ID)
        await asyncio.sleep(min(0.05 * (attempt + 1), 1.0))
    raise errors.BookieUnavailableError(
        f"ledger {metadata.ledger_id}: could not fence enough bookies of {ensemble}")


async def recover_tail(handle: ReplicatedReadHandle, lac: types.EntryId,
                       settings: ClientSettings) -> types.EntryId:
    """Read forward from lac+1 until an entry is known absent; rewrite what was found."""
    entry_id = lac + 1
    while True:
        found = await recovery_read(handle, entry_id, settings)
        if found is None:
            return types.EntryId(entry_id - 1)
        await rewrite(handle, found, settings)
        entry_id += 1


async def recovery_read(handle: ReplicatedReadHandle, entry_id: int,
                        settings: ClientSettings) -> storage_api.StoredEntry | None:
    """The entry if any bookie of its write set has it; None once enough say they don't."""
    metadata = handle.metadata
    bookies = handle.write_set_of(entry_id)
    timeout_s = settings.read_entry_timeout_ms / 1000
    no_such: set[types.BookieId] = set()
    for attempt in range(settings.recovery_read_retry_max):
        asking = [b for b in bookies if b not in no_such]
        answers = await asyncio.gather(
            *(asyncio.wait_for(handle.pool.get(b).read_entry(
                metadata.ledger_id, types.EntryId(entry_id), fence=True,
                master_key=metadata.password), timeout_s) for b in asking),
            return_exceptions=True)
        for bookie, answer in zip(asking, answers):
            if isinstance(answer, storage_api.StoredEntry):
                return answer
            if isinstance(answer, errors.NoSuchEntryError | errors.NoSuchLedgerError):
                no_such.add(bookie)
        if schedule.entry_absent(no_such, metadata.write_quorum_size, metadata.ack_quorum_size):
            return None
        await asyncio.sleep(min(0.05 * (attempt + 1), 1.0))
    raise errors.BookieUnavailableError(
        f"ledger {metadata.ledger_id}: cannot tell whether entry {entry_id} exists")


async def rewrite(handle: ReplicatedReadHandle, stored: storage_api.StoredEntry,
                  settings: ClientSettings) -> None:
    """Give a recovered entry its full write set again (recovery adds pass the fence);
    at least AQ copies must be confirmed before the ledger may be closed past it."""
    metadata = handle.metadata
    timeout_s = settings.add_entry_timeout_ms / 1000
    confirmed: set[types.BookieId] = set()
    bookies = handle.write_set_of(stored.entry_id)
    for attempt in range(settings.recovery_read_retry_max):
        asking = [b for b in bookies if b not in confirmed]
        answers = await asyncio.gather(
            *(asyncio.wait_for(handle.pool.get(b).add_entry(
                metadata.ledger_id, stored.entry_id, stored.last_add_confirmed,
                stored.payload, metadata.password, recovery=True), timeout_s)
              for b in asking),
            return_exceptions=True)
        confirmed.update(b for b, answer in zip(asking, answers) if answer is None)
        if len(confirmed) == len(bookies) or (
                len(confirmed) >= metadata.ack_quorum_size and attempt >= 2):
            return
        await asyncio.sleep(min(0.05 * (attempt + 1), 1.0))
    raise errors.BookieUnavailableError(
        f"ledger {metadata.ledger_id}: could not re-replicate entry {stored.entry_id}")
