"""The ManagedLedger and ManagedCursor contracts the broker's topics are built on.

Modelled on Apache Pulsar's managed-ledger module: a ManagedLedger is an
append-only log of entries kept in a sequence of ledgers; a cursor is a named
reader that remembers what was acknowledged (mark-delete position plus
individually deleted ranges) across restarts.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from pulsar_broker.managed_ledger import stats
    from pulsar_broker.managed_ledger.config import ManagedLedgerConfig


@dataclass(frozen=True, order=True)
class Position:
    """Where an entry lives: (ledger id, entry id). Ordered like the log."""

    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"


#: Before every entry of every ledger.
EARLIEST = Position(-1, -1)
#: After every entry (used as "latest" by readers).
LATEST = Position(2**63 - 1, 2**63 - 1)


@dataclass(frozen=True)
class Entry:
    position: Position
    #: The bytes exactly as the producer sent them (metadata + payload).
    data: bytes


class InitialPosition(enum.Enum):
    LATEST = "latest"
    EARLIEST = "earliest"


@dataclass(frozen=True)
class LedgerInfo:
    """One ledger of a managed ledger, as listed in its metadata."""

    ledger_id: int
    entries: int
    size: int
    timestamp_ms: int


class ManagedCursor(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def durable(self) -> bool: ...

    @property
    def read_position(self) -> Position:
        """The next entry read_entries will return."""

    @property
    def mark_delete_position(self) -> Position:
        """Every entry at or before this one is acknowledged."""

    @property
    def individually_deleted_ranges(self) -> Sequence[tuple[Position, Position]]:
        """Acknowledged ranges after the mark-delete position, as (open lower, closed upper]."""

    @property
    def properties(self) -> dict[str, int]: ...

    async def read_entries(self, max_entries: int, max_bytes: int | None = None) -> list[Entry]:
        """Up to max_entries from read_position on, skipping acknowledged ones; advances it."""

    async def read_entries_or_wait(
        self, max_entries: int, max_bytes: int | None = None
    ) -> list[Entry]:
        """Like read_entries, but waits for a new entry when there is none yet."""

    def cancel_pending_read(self) -> None: ...

    def has_more_entries(self) -> bool: ...

    async def replay_entries(self, positions: Iterable[Position]) -> list[Entry]:
        """Read these positions again (redelivery), leaving read_position alone."""

    def is_acknowledged(self, position: Position) -> bool: ...

    async def mark_delete(self, position: Position, properties: dict[str, int] | None = None) -> None:
        """Cumulative acknowledgement of everything up to position."""

    async def delete(self, positions: Iterable[Position]) -> None:
        """Individual acknowledgement; mark-delete moves over any contiguous prefix."""

    async def delete_batch_indexes(self, position: Position, ack_set: Sequence[int]) -> None:
        """Acknowledge some messages of the batch at position (batch-index ack): the set bits
        of ack_set's 64-bit words are the messages still unacknowledged. Acknowledgements
        add up; the entry is deleted once all its messages are acknowledged."""

    def batch_ack_set(self, position: Position) -> Sequence[int] | None:
        """The messages of a partly acknowledged batch still unacknowledged, as bit-set words
        (CommandMessage.ack_set); None when no message of it was acknowledged alone."""

    def rewind(self) -> None:
        """Read again from just after the mark-delete position."""

    def seek(self, read_position: Position) -> None:
        """Move the read position (not the acknowledgements)."""

    async def reset_cursor(self, position: Position) -> None:
        """Forget acknowledgements and restart from position (admin reset / consumer seek)."""

    async def find_newest_matching(
        self, condition: Callable[[Entry], bool], *, active_only: bool = False
    ) -> Position | None:
        """Last entry (in log order) for which condition holds, assuming it is monotonic.

        Searches every stored entry (seek by publish time), or only those after the
        mark-delete position when active_only is set (message expiry).
        """

    async def skip_entries(self, count: int) -> None:
        """Acknowledge the next count unacknowledged entries."""

    async def clear_backlog(self) -> None:
        """Acknowledge everything written so far."""

    @property
    def number_of_entries_in_backlog(self) -> int: ...

    async def flush(self) -> None:
        """Persist the acknowledgement state now instead of at the next debounce tick."""

    async def close(self) -> None: ...


class ManagedLedger(Protocol):
    @property
    def name(self) -> str: ...

    async def add_entry(self, data: bytes) -> Position:
        """Append one entry; returns its position once durable. Completes in call order."""

    def add_entry_future(self, data: bytes) -> asyncio.Future[Position]:
        """add_entry without a coroutine (the broker's publish path): a future resolved with
        the position once durable, in call order. Refusals raise at once; never cancel it."""

    async def open_cursor(
        self, name: str, initial_position: InitialPosition = InitialPosition.LATEST
    ) -> ManagedCursor:
        """A durable cursor, created at initial_position the first time, recovered after."""

    def new_non_durable_cursor(
        self, start_position: Position, name: str | None = None, *, inclusive: bool = False
    ) -> ManagedCursor:
        """A reader's cursor that starts at (or just after) start_position and is not persisted."""

    async def delete_cursor(self, name: str) -> None: ...

    @property
    def cursors(self) -> Sequence[ManagedCursor]:
        """The durable cursors (subscriptions); readers' non-durable cursors are not listed."""

    @property
    def last_confirmed_entry(self) -> Position:
        """The newest entry written (possibly in an earlier ledger than the current one);
        (current ledger, -1) when the managed ledger has never held an entry."""

    @property
    def first_position(self) -> Position: ...

    @property
    def number_of_entries(self) -> int: ...

    @property
    def total_size(self) -> int: ...

    @property
    def ledgers(self) -> Sequence[LedgerInfo]: ...

    async def read_entry(self, position: Position) -> Entry: ...

    def update_config(self, ml_config: ManagedLedgerConfig) -> None:
        """New settings from now on: new ledgers use its quorums, trimming its retention."""

    async def terminate(self) -> Position:
        """Refuse further adds; returns the last position."""

    @property
    def is_terminated(self) -> bool: ...

    @property
    def properties(self) -> dict[str, str]:
        """The managed ledger's own properties (the topic epoch, for one)."""

    async def set_property(self, key: str, value: str) -> None:
        """Record a property durably, in the managed ledger's metadata."""

    async def trim_consumed_ledgers(self) -> list[int]:
        """Delete now the ledgers every durable cursor is past and retention lets go."""

    async def truncate(self) -> list[int]:
        """Move every cursor to the end, then delete every ledger but the current one,
        whatever the retention; the ids deleted."""

    async def close(self) -> None: ...

    async def delete(self) -> None:
        """Delete every ledger, every cursor and the metadata."""

    @property
    def stats(self) -> stats.ManagedLedgerStats:
        """What this instance counted since it was opened (adds, reads, mark-deletes)."""


class ManagedLedgerFactory(Protocol):
    @property
    def default_config(self) -> ManagedLedgerConfig:
        """The broker's settings; per-topic variants are derived from it."""

    async def open(
        self, name: str, ml_config: ManagedLedgerConfig | None = None
    ) -> ManagedLedger:
        """Open (or create) the managed ledger called name; one instance per name.

        ml_config (e.g. with a namespace's retention) applies when this call opens it;
        the factory's default configuration otherwise.
        """

    async def exists(self, name: str) -> bool: ...

    async def delete(self, name: str) -> None: ...

    async def shutdown(self) -> None: ...

    def cache_counts(self) -> stats.CacheCounts:
        """The shared entry cache's size and counters now."""
