"""What one bookie's storage offers: the operations BookKeeper's wire protocol carries.

The in-process ledger client of `pulsar standalone` calls this directly; the
bookie server (a later part) serves the same calls over the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pulsar_bookie import types


@dataclass(frozen=True)
class StoredEntry:
    ledger_id: types.LedgerId
    entry_id: types.EntryId
    #: The writer's last-add-confirmed when it sent this entry.
    last_add_confirmed: types.EntryId
    payload: bytes


class LedgerStorage(Protocol):
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
        """Durably store one entry; returns once it is in the journal and synced.

        A fenced ledger refuses adds (LedgerFencedError) unless recovery is set,
        which is how a recovering client re-replicates entries it found.
        """

    async def read_entry(
        self, ledger_id: types.LedgerId, entry_id: types.EntryId
    ) -> StoredEntry:
        """The entry as it was added (NoSuchEntryError / NoSuchLedgerError otherwise)."""

    async def read_last_add_confirmed(self, ledger_id: types.LedgerId) -> types.EntryId:
        """Highest LAC this bookie has seen for the ledger (carried with each add)."""

    async def last_entry_id(self, ledger_id: types.LedgerId) -> types.EntryId:
        """Highest entry id stored here for the ledger, INVALID_ENTRY_ID when none."""

    async def fence_ledger(self, ledger_id: types.LedgerId, master_key: bytes) -> types.EntryId:
        """Fence the ledger (durably) and return this bookie's LAC for it."""

    async def is_fenced(self, ledger_id: types.LedgerId) -> bool: ...

    async def delete_ledger(self, ledger_id: types.LedgerId) -> None:
        """Forget the ledger; its space is reclaimed by the next garbage collection."""

    async def list_ledgers(self) -> list[types.LedgerId]: ...
