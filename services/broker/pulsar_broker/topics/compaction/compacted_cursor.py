"""The cursor of a `read_compacted` subscription: the compacted view, then the topic.

Positions up to the compaction horizon are served from the compacted ledger
(the latest message per key, with the positions they have in the topic);
once past the horizon, the topic's own entries follow. Everything else
(acknowledgements, seeks, backlog) is the subscription's cursor's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.topics.compaction.compacted_ledger import CompactedView


def _after(position: ml.Position) -> ml.Position:
    """A position just after this one (the cursor maps it to the next entry that exists)."""
    return ml.Position(position.ledger_id, position.entry_id + 1)


class CompactedCursor:
    """A ManagedCursor that reads through the topic's compacted view."""

    def __init__(self, cursor: ml.ManagedCursor,
                 view: Callable[[], Awaitable[CompactedView | None]],
                 current_view: CompactedView | None = None) -> None:
        """view gives the topic's compacted view as it is at each read (a compaction may
        replace it); current_view is the one known now, for has_more_entries."""
        self.cursor = cursor
        self._view = view
        self._known_view = current_view

    # Reading: the compacted view first

    async def _read_compacted(self, max_entries: int,
                              max_bytes: int | None) -> list[ml.Entry] | None:
        view = await self._view()
        self._known_view = view
        position = self.cursor.read_position
        if view is None or position > view.horizon:
            return None
        entries = [e for e in await view.read_from(position, max_entries, max_bytes)
                   if not self.cursor.is_acknowledged(e.position)]
        if entries:
            self.cursor.seek(_after(entries[-1].position))
            return entries
        # Nothing left in the view: the topic's entries after the horizon follow.
        self.cursor.seek(_after(view.horizon))
        return None

    async def read_entries(self, max_entries: int, max_bytes: int | None = None) -> list[ml.Entry]:
        compacted = await self._read_compacted(max_entries, max_bytes)
        if compacted is not None:
            return compacted
        return await self.cursor.read_entries(max_entries, max_bytes)

    async def read_entries_or_wait(
        self, max_entries: int, max_bytes: int | None = None
    ) -> list[ml.Entry]:
        compacted = await self._read_compacted(max_entries, max_bytes)
        if compacted is not None:
            return compacted
        return await self.cursor.read_entries_or_wait(max_entries, max_bytes)

    def has_more_entries(self) -> bool:
        view = self._known_view
        if view is not None and self.cursor.read_position <= view.horizon:
            return True
        return self.cursor.has_more_entries()

    # The rest is the subscription cursor's

    @property
    def name(self) -> str:
        return self.cursor.name

    @property
    def durable(self) -> bool:
        return self.cursor.durable

    @property
    def read_position(self) -> ml.Position:
        return self.cursor.read_position

    @property
    def mark_delete_position(self) -> ml.Position:
        return self.cursor.mark_delete_position

    @property
    def individually_deleted_ranges(self) -> Sequence[tuple[ml.Position, ml.Position]]:
        return self.cursor.individually_deleted_ranges

    @property
    def properties(self) -> dict[str, int]:
        return self.cursor.properties

    @property
    def number_of_entries_in_backlog(self) -> int:
        return self.cursor.number_of_entries_in_backlog

    def cancel_pending_read(self) -> None:
        self.cursor.cancel_pending_read()

    async def replay_entries(self, positions: Iterable[ml.Position]) -> list[ml.Entry]:
        return await self.cursor.replay_entries(positions)

    def is_acknowledged(self, position: ml.Position) -> bool:
        return self.cursor.is_acknowledged(position)

    async def mark_delete(self, position: ml.Position,
                          properties: dict[str, int] | None = None) -> None:
        await self.cursor.mark_delete(position, properties)

    async def delete(self, positions: Iterable[ml.Position]) -> None:
        await self.cursor.delete(positions)

    def rewind(self) -> None:
        self.cursor.rewind()

    def seek(self, read_position: ml.Position) -> None:
        self.cursor.seek(read_position)

    async def reset_cursor(self, position: ml.Position) -> None:
        await self.cursor.reset_cursor(position)

    async def find_newest_matching(
        self, condition: Callable[[ml.Entry], bool], *, active_only: bool = False
    ) -> ml.Position | None:
        return await self.cursor.find_newest_matching(condition, active_only=active_only)

    async def skip_entries(self, count: int) -> None:
        await self.cursor.skip_entries(count)

    async def clear_backlog(self) -> None:
        await self.cursor.clear_backlog()

    async def flush(self) -> None:
        await self.cursor.flush()

    async def close(self) -> None:
        await self.cursor.close()
