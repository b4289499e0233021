"""The ledger API: create, open (with recovery), append, read, close, delete.

Modelled on BookKeeper's client API. `pulsar standalone` uses the in-process
implementation over one local bookie; clusters use the replicated client,
which implements exactly this contract.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from pulsar_bookie import types


class LedgerState(enum.Enum):
    OPEN = "OPEN"
    IN_RECOVERY = "IN_RECOVERY"
    CLOSED = "CLOSED"


@dataclass(frozen=True)
class Fragment:
    """Entries from first_entry_id on are stored on these bookies (until the next fragment)."""

    first_entry_id: types.EntryId
    ensemble: tuple[types.BookieId, ...]


@dataclass(frozen=True)
class LedgerMetadata:
    ledger_id: types.LedgerId
    ensemble_size: int
    write_quorum_size: int
    ack_quorum_size: int
    state: LedgerState
    #: Last entry of a closed ledger; INVALID_ENTRY_ID while open or when empty.
    last_entry_id: types.EntryId
    #: Bytes of payload in a closed ledger.
    length: int
    ensembles: tuple[Fragment, ...]
    ctime_ms: int
    #: Free-form tags; the managed ledger records its name under "pulsar/managed-ledger".
    custom_metadata: Mapping[str, str] = field(default_factory=dict)
    #: Shared secret the writer and recovering readers present to bookies.
    password: bytes = b""

    @property
    def is_closed(self) -> bool:
        return self.state is LedgerState.CLOSED


@dataclass(frozen=True)
class LedgerEntry:
    ledger_id: types.LedgerId
    entry_id: types.EntryId
    payload: bytes


class ReadHandle(Protocol):
    @property
    def ledger_id(self) -> types.LedgerId: ...

    @property
    def metadata(self) -> LedgerMetadata: ...

    @property
    def last_add_confirmed(self) -> types.EntryId:
        """Entries up to here are readable; a closed ledger's LAC is its last entry id."""

    @property
    def length(self) -> int: ...

    async def read(self, first_entry_id: int, last_entry_id: int) -> Sequence[LedgerEntry]:
        """Entries first..last inclusive, all at or below the LAC (error otherwise)."""

    async def read_last_add_confirmed(self) -> types.EntryId:
        """Ask storage for a newer LAC (for readers tailing a ledger someone else writes)."""

    async def close(self) -> None: ...


class WriteHandle(ReadHandle, Protocol):
    async def append(self, payload: bytes) -> types.EntryId:
        """Add one entry; returns its id once durable. Concurrent appends complete in order."""

    async def close(self) -> None:
        """Seal the ledger at its last confirmed entry (metadata updated by CAS)."""


class LedgerClient(Protocol):
    async def create_ledger(
        self,
        ensemble_size: int,
        write_quorum_size: int,
        ack_quorum_size: int,
        custom_metadata: Mapping[str, str] | None = None,
        password: bytes = b"",
    ) -> WriteHandle: ...

    async def open_ledger(
        self, ledger_id: types.LedgerId, *, recovery: bool = True, password: bytes = b""
    ) -> ReadHandle:
        """Open for reading. With recovery, fence the ledger, recover its tail and close it."""

    async def get_ledger_metadata(self, ledger_id: types.LedgerId) -> LedgerMetadata: ...

    async def delete_ledger(self, ledger_id: types.LedgerId) -> None:
        """Delete data and metadata; a ledger that is already gone is not an error."""

    async def close(self) -> None: ...
