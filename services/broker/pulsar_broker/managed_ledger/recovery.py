"""Recovering the ledger a previous owner of a managed ledger was writing.

On open, the last listed ledger may still be open (its writer crashed or
lost the topic). It is opened in recovery mode, which fences it on its
bookies so the old writer can add nothing more and closes it at the last
entry an ack quorum holds; then its entries and size are counted for the
ledger list.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pulsar_bookie import errors as bookie_errors
from pulsar_bookie import types
from pulsar_bookie.client import api as client_api

from pulsar_broker.managed_ledger import api, errors

log = logging.getLogger(__name__)

#: A recovered ledger whose client does not know its length is measured by reading it, in
#: chunks of this many entries, at most RECOVERED_SIZE_SCAN_MAX of them (then extrapolated).
SIZE_SCAN_CHUNK = 500
RECOVERED_SIZE_SCAN_MAX = 20_000


async def recover_last_ledger(
    name: str,
    client: client_api.LedgerClient,
    info: api.LedgerInfo,
    password: bytes,
    now_ms: Callable[[], int],
) -> api.LedgerInfo:
    """Fence and close the ledger the previous owner was writing; count what it holds."""
    try:
        handle = await client.open_ledger(
            types.LedgerId(info.ledger_id), recovery=True, password=password
        )
    except bookie_errors.NoSuchLedgerError:
        # As Pulsar does: a listed ledger whose metadata is gone holds nothing to keep.
        log.warning("%s: last ledger %s no longer exists", name, info.ledger_id)
        return api.LedgerInfo(info.ledger_id, 0, 0, now_ms())
    except bookie_errors.BookieError as exc:
        raise errors.NonRecoverableLedgerError(
            f"{name}: cannot recover ledger {info.ledger_id}: {exc}"
        ) from exc
    entries = handle.last_add_confirmed + 1
    size = handle.length if handle.length >= 0 else await measure_size(handle, entries)
    await handle.close()
    if entries == info.entries and size == info.size:
        return info
    return api.LedgerInfo(info.ledger_id, entries, size, now_ms())


async def measure_size(handle: client_api.ReadHandle, entries: int) -> int:
    """Bytes in a ledger's first `entries` entries (extrapolated past RECOVERED_SIZE_SCAN_MAX)."""
    scanned = min(entries, RECOVERED_SIZE_SCAN_MAX)
    size = 0
    for first in range(0, scanned, SIZE_SCAN_CHUNK):
        last = min(first + SIZE_SCAN_CHUNK, scanned) - 1
        try:
            size += sum(len(e.payload) for e in await handle.read(first, last))
        except bookie_errors.BookieError as exc:
            raise errors.NonRecoverableLedgerError(
                f"cannot read ledger {handle.ledger_id} to measure it: {exc}"
            ) from exc
    return size if scanned == entries else size * entries // max(scanned, 1)
