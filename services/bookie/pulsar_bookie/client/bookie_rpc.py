"""The port between the ledger client and one bookie: the requests BookKeeper's protocol carries.

The network transport (pulsar_bookie.net) implements it over TCP; the seeded
simulation of the ledger protocol implements it with injected drops, delays,
reordering and crashes; the in-process standalone bookie can be wrapped to
serve it too. The replicated ledger client only ever talks through this port.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from pulsar_bookie import types
from pulsar_bookie.storage import api as storage_api


class BookieRpc(Protocol):
    """Requests to one bookie. Failures raise pulsar_bookie.errors: NoSuchEntryError,
    NoSuchLedgerError, LedgerFencedError, UnauthorizedAccessError, TooManyRequestsError,
    BookieUnavailableError (unreachable, timed out or closed)."""

    @property
    def bookie_id(self) -> types.BookieId: ...

    async def add_entry(
        self,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        last_add_confirmed: types.EntryId,
        payload: bytes,
        master_key: bytes,
        *,
        recovery: bool = False,
    ) -> None:
        """Returns once the bookie has the entry durably (journal synced)."""

    def add_entry_future(
        self,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        last_add_confirmed: types.EntryId,
        payload: bytes,
        master_key: bytes,
        timeout_s: float,
    ) -> asyncio.Future[None]:
        """add_entry as a future, for the writer's hot path (no task per add): it completes
        as add_entry would return or raise, and fails with BookieUnavailableError once
        timeout_s has passed without a reply. A refusal known at once may raise instead."""

    async def read_entry(
        self,
        ledger_id: types.LedgerId,
        entry_id: types.EntryId,
        *,
        fence: bool = False,
        master_key: bytes = b"",
    ) -> storage_api.StoredEntry:
        """Read one entry; with fence (recovery reads) the ledger is fenced first."""

    def read_entry_future(
        self, ledger_id: types.LedgerId, entry_id: types.EntryId, timeout_s: float
    ) -> asyncio.Future[storage_api.StoredEntry]:
        """read_entry (no fence) as a future, for the reader's hot path: as add_entry_future."""

    async def read_last_add_confirmed(self, ledger_id: types.LedgerId) -> types.EntryId: ...

    async def wait_last_add_confirmed(
        self, ledger_id: types.LedgerId, previous: types.EntryId, timeout_ms: int
    ) -> types.EntryId:
        """Long poll: return as soon as the bookie's LAC for the ledger exceeds previous,
        or the current LAC after timeout_ms."""

    async def fence_ledger(self, ledger_id: types.LedgerId, master_key: bytes) -> types.EntryId:
        """Fence and return the bookie's LAC for the ledger."""

    async def close(self) -> None: ...


class BookieRpcPool(Protocol):
    """Connections to bookies by id, created on first use and reused."""

    def get(self, bookie_id: types.BookieId) -> BookieRpc: ...

    async def close(self) -> None: ...
