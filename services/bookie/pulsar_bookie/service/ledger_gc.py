"""Deleting the data of ledgers whose metadata is gone, as BookKeeper's bookies do.

Ledger clients delete a ledger by removing its metadata (/ledgers/<id>); every
bookie then finds, on its own timer, the ledgers it stores that no longer
have metadata, and deletes them from its storage (the engine's garbage
collection then reclaims their space). A ledger's metadata is written before
any entry is sent to a bookie, so a stored ledger without metadata was deleted.
"""

from __future__ import annotations

import asyncio
import logging

from pulsar_common.metadata import api as metadata_api

from pulsar_bookie import types
from pulsar_bookie.client import ledger_metadata
from pulsar_bookie.storage import api as storage_api

log = logging.getLogger(__name__)


async def delete_orphaned_ledgers(
    storage: storage_api.LedgerStorage, store: metadata_api.MetadataStore
) -> list[types.LedgerId]:
    """One pass: delete every stored ledger whose metadata record is absent."""
    known = set(await ledger_metadata.LedgerMetadataStore(store).ledger_ids())
    deleted = []
    for ledger_id in await storage.list_ledgers():
        if ledger_id in known:
            continue
        # Re-check this one ledger: it may have been created after the listing above.
        if await store.exists(ledger_metadata.ledger_path(ledger_id)):
            continue
        await storage.delete_ledger(ledger_id)
        deleted.append(ledger_id)
    if deleted:
        log.info("deleted %d ledgers whose metadata is gone: %s", len(deleted), deleted[:10])
    return deleted


async def run_periodically(storage: storage_api.LedgerStorage, store: metadata_api.MetadataStore,
                           interval_s: float) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            await delete_orphaned_ledgers(storage, store)
        except Exception as exc:  # noqa: BLE001 - the next pass tries again
            log.warning("ledger garbage collection pass failed: %s", exc)
