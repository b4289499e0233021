"""The cursors of one managed ledger: durable ones by name, and the readers' non-durable ones.

Durable cursors (subscriptions) are loaded from the metadata store when the
managed ledger opens, created on first use at the initial position asked
for, and hold ledgers back from trimming; two opens of the same name at
once share one. Non-durable cursors (readers) live only here, in memory.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence

from pulsar_broker.managed_ledger import api, cursor, errors, metadata

log = logging.getLogger(__name__)


class CursorRegistry:
    def __init__(self, ledger: cursor.CursorLedger, meta: metadata.ManagedLedgerMetadata):
        self._ledger = ledger
        self._meta = meta
        self._durable: dict[str, cursor.ManagedCursorImpl] = {}
        self._opening: dict[str, asyncio.Task[cursor.ManagedCursorImpl]] = {}
        self._non_durable: set[cursor.ManagedCursorImpl] = set()

    @property
    def durable(self) -> Sequence[cursor.ManagedCursorImpl]:
        return list(self._durable.values())

    def slowest_mark_delete(self) -> api.Position | None:
        positions = [c.mark_delete_position for c in self._durable.values()]
        return min(positions) if positions else None

    async def load(self) -> None:
        """The durable cursors persisted under the managed ledger."""
        for cursor_name in await self._meta.cursor_names():
            versioned = await self._meta.read_cursor(cursor_name)
            if versioned is not None:
                self._durable[cursor_name] = cursor.ManagedCursorImpl.recover(
                    self._ledger, cursor_name, versioned.value, versioned.version
                )

    async def open(
        self, name: str, initial_position: api.InitialPosition
    ) -> cursor.ManagedCursorImpl:
        existing = self._durable.get(name)
        if existing is not None and not existing.is_closed:
            return existing
        opening = self._opening.get(name)
        if opening is None:
            opening = asyncio.ensure_future(self._open(name, initial_position))
            self._opening[name] = opening
            opening.add_done_callback(lambda _: self._opening.pop(name, None))
        return await asyncio.shield(opening)

    async def _open(
        self, name: str, initial_position: api.InitialPosition
    ) -> cursor.ManagedCursorImpl:
        existing = self._durable.get(name)
        if existing is not None:
            reopened = existing.reopen()
        else:
            ledger = self._ledger
            if initial_position is api.InitialPosition.EARLIEST:
                mark_delete = ledger.layout.previous_position(ledger.first_position)
            else:
                mark_delete = ledger.last_confirmed_entry
            reopened = await cursor.ManagedCursorImpl.create(ledger, name, mark_delete)
        self._durable[name] = reopened
        return reopened

    def new_non_durable(
        self, start_position: api.Position, name: str | None, inclusive: bool
    ) -> cursor.ManagedCursorImpl:
        ledger = self._ledger
        last = ledger.last_confirmed_entry
        if start_position == api.EARLIEST:
            mark_delete = ledger.layout.previous_position(ledger.first_position)
        elif start_position == api.LATEST or start_position > last:
            mark_delete = last
        elif inclusive:
            mark_delete = ledger.layout.previous_position(start_position)
        else:
            mark_delete = start_position
        reader = cursor.ManagedCursorImpl(
            ledger, name or f"reader-{uuid.uuid4().hex[:10]}", mark_delete, durable=False
        )
        self._non_durable.add(reader)
        return reader

    async def clear_backlogs(self) -> None:
        """Move every open cursor (readers' too) to the last entry, and persist the durable
        ones at once: what truncate does before it deletes the ledgers behind them."""
        for each in list(self._durable.values()) + list(self._non_durable):
            if not each.is_closed:
                await each.clear_backlog()
        for each in list(self._durable.values()):
            if not each.is_closed:
                await each.flush()

    async def delete(self, name: str) -> None:
        found = self._durable.pop(name, None)
        if found is None:
            raise errors.CursorNotFoundError(f"{self._ledger.name} has no cursor {name!r}")
        await found.close(flush=False)
        await self._meta.delete_cursor(name)

    def closed(self, closed: cursor.ManagedCursorImpl) -> None:
        self._non_durable.discard(closed)

    async def close_all(self, *, flush: bool) -> None:
        """Close every cursor; flush=False when this instance may no longer write (fenced)."""
        for each in list(self._durable.values()) + list(self._non_durable):
            try:
                await each.close(flush=flush)
            except errors.ManagedLedgerError as exc:
                log.warning("%s: closing cursor %s failed: %s", self._ledger.name, each.name, exc)
