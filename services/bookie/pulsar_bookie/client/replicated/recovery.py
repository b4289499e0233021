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
   close stands. When some bookies of the last ensemble did not answer the
   fence and there is a tail to rewrite, and the caller gave a bookie source,
   the tail first moves to a new fragment starting at LAC+1 with those bookies
   replaced (an ensemble change, as BookKeeper's recovery adds do): a dead
   bookie would otherwise keep the tail from ever reaching its ack quorum.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random

from pulsar_common import backoff

from pulsar_bookie import errors, types
from pulsar_bookie.client import api, bookie_rpc, ledger_metadata
from pulsar_bookie.client.replicated import placement, schedule
from pulsar_bookie.client.replicated.reader import ReplicatedReadHandle
from pulsar_bookie.client.replicated.settings import ClientSettings
from pulsar_bookie.storage import api as storage_api

log = logging.getLogger(__name__)

#: Length of a ledger closed by recovery: the bytes before the recovered tail are not
#: known without reading every entry, so they are not counted.
LENGTH_UNKNOWN = -1
RECOVERY_ATTEMPTS_MAX = 20
#: Pauses between rounds of fence, recovery-read and rewrite requests while too few
#: bookies have answered: a twentieth of a second more each round, at most a second.
RECOVERY_RETRY = backoff.BackoffPolicy(first_s=0.05, max_s=1.0, multiplier=1.0, step_s=0.05)


async def recover(
    versioned: ledger_metadata.VersionedMetadata,
    meta: ledger_metadata.LedgerMetadataStore,
    pool: bookie_rpc.BookieRpcPool,
    settings: ClientSettings,
    source: placement.BookieSource | None = None,
    rng: random.Random | None = None,
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
            replies = await fence_replies(handle, settings)
            lac = max(replies.values(), default=types.INVALID_ENTRY_ID)
            tail = await read_tail(handle, lac, settings)
            silent = [b for i, b in enumerate(versioned.metadata.ensembles[-1].ensemble)
                      if i not in replies]
            if tail and silent and source is not None:
                try:
                    versioned = await _replace_silent(versioned, meta, source, silent,
                                                      types.EntryId(lac + 1),
                                                      rng or random.Random())
                except errors.NotEnoughBookiesError:
                    pass  # no spare bookie: rewrite to the ensemble as it is, with retries
                handle = ReplicatedReadHandle(versioned.metadata, pool, settings,
                                              types.INVALID_ENTRY_ID)
            for stored in tail:
                await rewrite(handle, stored, settings)
            last = tail[-1].entry_id if tail else lac
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


async def _replace_silent(
    versioned: ledger_metadata.VersionedMetadata,
    meta: ledger_metadata.LedgerMetadataStore,
    source: placement.BookieSource,
    silent: list[types.BookieId],
    first: types.EntryId,
    rng: random.Random,
) -> ledger_metadata.VersionedMetadata:
    """A new last fragment from `first` with the bookies that did not answer replaced."""
    metadata = versioned.metadata
    ensemble = list(metadata.ensembles[-1].ensemble)
    candidates = await source.bookies()
    for bookie in silent:
        index = ensemble.index(bookie)
        ensemble[index] = placement.replace_bookie(candidates, ensemble, bookie, rng,
                                                   exclude=silent)
    fragments = list(metadata.ensembles)
    if fragments[-1].first_entry_id == first:
        fragments[-1] = api.Fragment(first, tuple(ensemble))
    else:
        fragments.append(api.Fragment(first, tuple(ensemble)))
    log.info("ledger %s: recovery moves its tail from entry %s off %s", metadata.ledger_id,
             first, silent)
    return await meta.write(dataclasses.replace(metadata, ensembles=tuple(fragments)),
                            versioned.version)


async def fence(handle: ReplicatedReadHandle, settings: ClientSettings) -> types.EntryId:
    """Fence the last ensemble until the replies cover every ack quorum; the highest LAC."""
    replies = await fence_replies(handle, settings)
    return max(replies.values(), default=types.INVALID_ENTRY_ID)


async def fence_replies(handle: ReplicatedReadHandle,
                        settings: ClientSettings) -> dict[int, types.EntryId]:
    """Fence the last ensemble until the replies cover every ack quorum; the LAC each
    answering ensemble position reported."""
    metadata = handle.metadata
    ensemble = metadata.ensembles[-1].ensemble
    timeout_s = settings.read_entry_timeout_ms / 1000
    replied: dict[int, types.EntryId] = {}
    delays = RECOVERY_RETRY.start()
    for _ in range(settings.recovery_read_retry_max):
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
            return replied
        await asyncio.sleep(delays.next_delay())
    raise errors.BookieUnavailableError(
        f"ledger {metadata.ledger_id}: could not fence enough bookies of {ensemble}")


async def recover_tail(handle: ReplicatedReadHandle, lac: types.EntryId,
                       settings: ClientSettings) -> types.EntryId:
    """Read forward from lac+1 until an entry is known absent; rewrite what was found."""
    tail = await read_tail(handle, lac, settings)
    for stored in tail:
        await rewrite(handle, stored, settings)
    return tail[-1].entry_id if tail else lac


async def read_tail(handle: ReplicatedReadHandle, lac: types.EntryId,
                    settings: ClientSettings) -> list[storage_api.StoredEntry]:
    """The entries after lac that some bookie has, up to the first known absent one."""
    tail: list[storage_api.StoredEntry] = []
    entry_id = lac + 1
    while True:
        found = await recovery_read(handle, entry_id, settings)
        if found is None:
            return tail
        tail.append(found)
        entry_id += 1


async def recovery_read(handle: ReplicatedReadHandle, entry_id: int,
                        settings: ClientSettings) -> storage_api.StoredEntry | None:
    """The entry if any bookie of its write set has it; None once enough say they don't."""
    metadata = handle.metadata
    bookies = handle.write_set_of(entry_id)
    timeout_s = settings.read_entry_timeout_ms / 1000
    no_such: set[types.BookieId] = set()
    delays = RECOVERY_RETRY.start()
    for _ in range(settings.recovery_read_retry_max):
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
        await asyncio.sleep(delays.next_delay())
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
    delays = RECOVERY_RETRY.start()
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
        await asyncio.sleep(delays.next_delay())
    raise errors.BookieUnavailableError(
        f"ledger {metadata.ledger_id}: could not re-replicate entry {stored.entry_id}")
