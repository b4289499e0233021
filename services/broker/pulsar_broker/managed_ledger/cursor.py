"""ManagedCursorImpl: a named reader of a managed ledger that remembers acknowledgements.

A durable cursor (a subscription) persists its mark-delete position, the
individually deleted ranges after it (at most managedLedgerMaxUnackedRangesToPersist),
the batch-index acks of partly acknowledged batches (at most
managedLedgerMaxBatchDeletedIndexToPersist) and its properties under the
managed ledger's path, debounced by managedLedgerCursorPositionFlushSeconds
and flushed on close. What was
persisted is never redelivered after a restart; what was not acknowledged is
never skipped (acknowledgements not yet persisted may be redelivered).
A non-durable cursor (a reader) keeps the same state in memory only. A
durable cursor counts each move of its mark-delete position in its managed
ledger's stats (Apache's MarkDeleteRate).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from pulsar_broker.managed_ledger import api, config, errors, layout, metadata, ranges, stats

log = logging.getLogger(__name__)


class CursorLedger(Protocol):
    """What a cursor needs from its managed ledger (and nothing more)."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> config.ManagedLedgerConfig: ...

    @property
    def layout(self) -> layout.LedgerLayout: ...

    @property
    def last_confirmed_entry(self) -> api.Position: ...

    @property
    def first_position(self) -> api.Position: ...

    @property
    def is_terminated(self) -> bool: ...

    @property
    def is_closed(self) -> bool: ...

    def now_ms(self) -> int: ...

    @property
    def stats(self) -> stats.ManagedLedgerStats:
        """Where a durable cursor counts its mark-delete moves."""

    async def read_entry(self, position: api.Position) -> api.Entry: ...

    async def read_positions(
        self, positions: Sequence[api.Position], max_bytes: int | None = None
    ) -> list[api.Entry]: ...

    def wait_for_entries(self) -> asyncio.Future[None]:
        """Resolves on the next added entry (or when the ledger closes or terminates)."""

    def schedule_trim(self) -> None:
        """A durable cursor's mark-delete position moved."""

    async def write_cursor(self, name: str, info: metadata.CursorInfo, expected_version: int) -> int:
        """Persist a durable cursor by CAS; a lost CAS fences the managed ledger."""

    def cursor_closed(self, closed: ManagedCursorImpl) -> None: ...


class ManagedCursorImpl:
    def __init__(
        self,
        ledger: CursorLedger,
        name: str,
        mark_delete: api.Position,
        *,
        durable: bool,
        version: int | None = None,
        properties: dict[str, int] | None = None,
    ):
        self._ledger = ledger
        self._name = name
        self._durable = durable
        self._acks = ranges.AckSet(ledger.layout, mark_delete)
        #: Partly acknowledged batches: position -> bit-set words, set bits unacknowledged.
        self._batch_acks: dict[api.Position, tuple[int, ...]] = {}
        self._read_position = ledger.layout.next_position(mark_delete)
        self._properties = dict(properties or {})
        self._version = version
        self._closed = False
        #: Bumped by seek/rewind/reset so a read finishing later does not move the position.
        self._epoch = 0
        self._pending_read: asyncio.Future[None] | None = None
        self._pending_read_cancelled = False
        self._dirty = False
        self._flush_task: asyncio.Task[None] | None = None
        self._flush_lock = asyncio.Lock()

    @classmethod
    async def create(
        cls, ledger: CursorLedger, name: str, mark_delete: api.Position
    ) -> ManagedCursorImpl:
        """A new durable cursor, persisted before it is returned."""
        created = cls(ledger, name, mark_delete, durable=True, version=-1)
        created._dirty = True
        await created.flush()
        return created

    @classmethod
    def recover(
        cls,
        ledger: CursorLedger,
        name: str,
        info: metadata.CursorInfo,
        version: int,
    ) -> ManagedCursorImpl:
        recovered = cls(
            ledger, name, info.mark_delete_position, durable=True, version=version,
            properties=info.properties,
        )
        recovered._acks.load(info.mark_delete_position, info.individually_deleted_ranges)
        recovered._batch_acks = {
            position: words for position, words in info.batch_deleted_indexes
            if not recovered._acks.is_acknowledged(position)
        }
        recovered._read_position = recovered._first_unread(
            ledger.layout.next_position(recovered._acks.mark_delete_position)
        )
        return recovered

    def reopen(self) -> ManagedCursorImpl:
        """A fresh instance for a durable cursor that was closed, with the same state."""
        again = ManagedCursorImpl(
            self._ledger, self._name, self.mark_delete_position, durable=True,
            version=self._version, properties=self._properties,
        )
        again._acks.load(self.mark_delete_position, self._acks.ranges())
        again._batch_acks = dict(self._batch_acks)
        return again

    # -- state -----------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def durable(self) -> bool:
        return self._durable

    @property
    def is_closed(self) -> bool:
        return self._closed

    @property
    def read_position(self) -> api.Position:
        return self._ledger.layout.at_or_after(self._read_position)

    @property
    def mark_delete_position(self) -> api.Position:
        return self._acks.mark_delete_position

    @property
    def individually_deleted_ranges(self) -> Sequence[tuple[api.Position, api.Position]]:
        return self._acks.ranges()

    @property
    def properties(self) -> dict[str, int]:
        return dict(self._properties)

    @property
    def number_of_entries_in_backlog(self) -> int:
        last = self._ledger.last_confirmed_entry
        total = self._ledger.layout.count_between(self.mark_delete_position, last)
        return max(total - self._acks.acknowledged_after_mark_delete, 0)

    def is_acknowledged(self, position: api.Position) -> bool:
        return self._acks.is_acknowledged(position)

    def batch_ack_set(self, position: api.Position) -> tuple[int, ...] | None:
        """For a partly acknowledged batch, its messages still unacknowledged as bit-set
        words (bit i set: message i is not acknowledged); None otherwise."""
        return self._batch_acks.get(position)

    def has_more_entries(self) -> bool:
        return self._first_unread(self._read_position) <= self._ledger.last_confirmed_entry

    def _first_unread(self, position: api.Position) -> api.Position:
        return self._acks.first_unacknowledged_at_or_after(position)

    def _check_open(self) -> None:
        if self._closed:
            raise errors.CursorAlreadyClosedError(f"cursor {self._name} is closed")

    # -- reading ---------------------------------------------------------------------

    async def read_entries(self, max_entries: int, max_bytes: int | None = None) -> list[api.Entry]:
        self._check_open()
        epoch = self._epoch
        for attempt in range(2):
            positions = self._next_positions(max_entries)
            if not positions:
                return []
            try:
                entries = await self._ledger.read_positions(positions, max_bytes)
                break
            except errors.NonRecoverableLedgerError:
                # A reader's ledgers may be trimmed under it (only durable cursors hold
                # ledgers); then it moves on to what still exists, as Pulsar's readers do.
                trimmed = any(not self._ledger.layout.exists(p) for p in positions)
                if attempt or not trimmed:
                    raise
        if entries and epoch == self._epoch:
            self._read_position = self._ledger.layout.next_position(entries[-1].position)
        return entries

    def _next_positions(self, max_entries: int) -> list[api.Position]:
        last = self._ledger.last_confirmed_entry
        layout = self._ledger.layout
        positions: list[api.Position] = []
        position = self._first_unread(self._read_position)
        while position <= last and len(positions) < max_entries:
            positions.append(position)
            position = self._first_unread(layout.next_position(position))
        return positions

    async def read_entries_or_wait(
        self, max_entries: int, max_bytes: int | None = None
    ) -> list[api.Entry]:
        while True:
            self._check_open()
            if self.has_more_entries():
                return await self.read_entries(max_entries, max_bytes)
            if self._ledger.is_terminated:
                raise errors.NoMoreEntriesToReadError(
                    f"{self._ledger.name} is terminated and cursor {self._name} read it all"
                )
            if self._ledger.is_closed:
                raise errors.ManagedLedgerClosedError(f"{self._ledger.name} is closed")
            waiter = self._ledger.wait_for_entries()
            self._pending_read = waiter
            self._pending_read_cancelled = False
            try:
                await waiter
            except asyncio.CancelledError:
                if self._pending_read_cancelled:
                    return []
                raise
            finally:
                self._pending_read = None

    def cancel_pending_read(self) -> None:
        """A waiting read_entries_or_wait returns [] at once."""
        if self._pending_read is not None and not self._pending_read.done():
            self._pending_read_cancelled = True
            self._pending_read.cancel()

    async def replay_entries(self, positions: Iterable[api.Position]) -> list[api.Entry]:
        self._check_open()
        wanted = sorted(p for p in set(positions) if not self._acks.is_acknowledged(p))
        return await self._ledger.read_positions(wanted)

    async def find_newest_matching(
        self, condition: Callable[[api.Entry], bool], *, active_only: bool = False
    ) -> api.Position | None:
        """Binary search: the last entry for which condition holds (older ones must hold too).

        Searches every stored entry, or only those after the mark-delete position
        when active_only is set (as message expiry does).
        """
        layout = self._ledger.layout
        start = self.mark_delete_position if active_only else layout.previous_position(
            self._ledger.first_position
        )
        last = self._ledger.last_confirmed_entry
        low, high = 1, layout.count_between(start, last)
        found: api.Position | None = None
        while low <= high:
            middle = (low + high) // 2
            position = layout.advance(start, middle)
            if condition(await self._ledger.read_entry(position)):
                found = position
                low = middle + 1
            else:
                high = middle - 1
        return found

    # -- acknowledging -----------------------------------------------------------------

    async def mark_delete(
        self, position: api.Position, properties: dict[str, int] | None = None
    ) -> None:
        self._check_open()
        if position > self._ledger.last_confirmed_entry:
            raise errors.InvalidCursorPositionError(
                f"cannot mark-delete {position}: past the last entry "
                f"{self._ledger.last_confirmed_entry}"
            )
        if properties is not None:
            self._properties = dict(properties)
        moved = self._acks.acknowledge_cumulative(position)
        if moved and self._durable:
            self._ledger.stats.mark_deletes += 1
        if moved and self._batch_acks:
            for done in [p for p in self._batch_acks if p <= position]:
                del self._batch_acks[done]
        await self._acknowledged(moved or properties is not None)

    async def delete(self, positions: Iterable[api.Position]) -> None:
        self._check_open()
        layout = self._ledger.layout
        last = self._ledger.last_confirmed_entry
        before = self.mark_delete_position
        changed = False
        for position in positions:
            if position <= last and layout.exists(position):
                changed = self._acks.acknowledge(position) or changed
                self._batch_acks.pop(position, None)
        if changed:
            moved = before != self.mark_delete_position
            if moved and self._durable:
                self._ledger.stats.mark_deletes += 1
            await self._acknowledged(True, mark_delete_moved=moved)

    async def delete_batch_indexes(self, position: api.Position, ack_set: Sequence[int]) -> None:
        """Acknowledge some messages of a batch: ack_set's set bits are those still not
        acknowledged (the client's view, as in CommandAck). Acknowledgements add up; once
        every message is acknowledged the entry is deleted. Ignored when batch-index acks
        are off (acknowledgmentAtBatchIndexLevelEnabled=false)."""
        self._check_open()
        if not self._ledger.config.deletion_at_batch_index_level_enabled:
            return
        if position > self._ledger.last_confirmed_entry or not self._ledger.layout.exists(position):
            return
        if self._acks.is_acknowledged(position):
            return
        before = self._batch_acks.get(position)
        words = tuple(ack_set)
        if before is not None:
            words = tuple(a & b for a, b in itertools.zip_longest(before, words, fillvalue=0))
        if not any(words):
            await self.delete([position])
            return
        if words != before:
            self._batch_acks[position] = words
            await self._persist_soon()

    async def _acknowledged(self, changed: bool, *, mark_delete_moved: bool = True) -> None:
        if self._read_position <= self.mark_delete_position:
            self._read_position = self._ledger.layout.next_position(self.mark_delete_position)
        if not changed:
            return
        if self._durable and mark_delete_moved:
            self._ledger.schedule_trim()
        await self._persist_soon()

    async def skip_entries(self, count: int) -> None:
        """Acknowledge the next count entries that are not acknowledged yet."""
        self._check_open()
        if count <= 0:
            return
        layout = self._ledger.layout
        last = self._ledger.last_confirmed_entry
        position = self.mark_delete_position
        for lower_open, upper_closed in [*self._acks.ranges(), (last, last)]:
            gap = layout.count_between(position, min(lower_open, last))
            if count <= gap:
                await self.mark_delete(layout.advance(position, count))
                return
            count -= gap
            position = upper_closed
        await self.mark_delete(last)

    async def clear_backlog(self) -> None:
        self._check_open()
        last = self._ledger.last_confirmed_entry
        if last > self.mark_delete_position:
            await self.mark_delete(last)

    def rewind(self) -> None:
        self._epoch += 1
        self._read_position = self._ledger.layout.next_position(self.mark_delete_position)

    def seek(self, read_position: api.Position) -> None:
        self._epoch += 1
        self._read_position = read_position

    async def reset_cursor(self, position: api.Position) -> None:
        """Forget acknowledgements and restart at position; persisted at once."""
        self._check_open()
        ledger = self._ledger
        if position == api.EARLIEST:
            position = ledger.first_position
        newest = ledger.layout.next_position(ledger.last_confirmed_entry)
        if position == api.LATEST or position > newest:
            position = newest
        self._epoch += 1
        self._acks.reset(api.Position(position.ledger_id, position.entry_id - 1))
        self._batch_acks.clear()
        self._read_position = position
        self._dirty = True
        if self._durable:
            await self.flush()

    # -- persistence -------------------------------------------------------------------

    async def _persist_soon(self) -> None:
        if not self._durable:
            return
        self._dirty = True
        delay_s = self._ledger.config.cursor_position_flush_seconds
        if delay_s <= 0:
            await self.flush()
        elif self._flush_task is None:
            self._flush_task = asyncio.ensure_future(self._flush_later(delay_s))

    async def _flush_later(self, delay_s: float) -> None:
        try:
            await asyncio.sleep(delay_s)
            await self.flush()
        except errors.ManagedLedgerError as exc:
            log.warning("cursor %s: persisting failed: %s", self._name, exc)
        finally:
            self._flush_task = None

    async def flush(self) -> None:
        """Persist the cursor now if anything changed since the last time."""
        if not self._durable:
            return
        async with self._flush_lock:
            if not self._dirty:
                return
            self._dirty = False
            limit = self._ledger.config.max_unacked_ranges_to_persist
            info = metadata.CursorInfo(
                self.mark_delete_position,
                tuple(self._acks.ranges(limit)),
                dict(self._properties),
                self._ledger.now_ms(),
                self._batch_acks_to_persist(),
            )
            expected = -1 if self._version is None else self._version
            try:
                self._version = await self._ledger.write_cursor(self._name, info, expected)
            except BaseException:
                self._dirty = True
                raise

    def _batch_acks_to_persist(self) -> tuple[tuple[api.Position, tuple[int, ...]], ...]:
        """The oldest partly acknowledged batches, up to managedLedgerMaxBatchDeletedIndexToPersist."""
        limit = self._ledger.config.max_batch_deleted_index_to_persist
        return tuple(sorted(self._batch_acks.items())[:limit])

    async def close(self, *, flush: bool = True) -> None:
        if self._closed:
            return
        if self._flush_task is not None:
            self._flush_task.cancel()
            self._flush_task = None
        if flush:
            await self.flush()
        self._closed = True
        self.cancel_pending_read()
        self._ledger.cursor_closed(self)
