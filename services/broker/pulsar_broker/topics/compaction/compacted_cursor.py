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
    """A ManagedCursor that reads through the topic's compacted view.

    It keeps its own place in the compacted view: the ledgers behind the
    compaction horizon may be trimmed, and the subscription's cursor then maps
    every position there to the first entry that still exists. As Apache does,
    a subscription that starts at the earliest message reads the compacted view
    from its start on its first read; later reads continue from where it got.
    Acknowledgements are honoured for the entries still stored.
    """

    def __init__(self, cursor: ml.ManagedCursor,
                 view: Callable[[], Awaitable[CompactedView | None]],
                 first_position: Callable[[], ml.Position],
                 current_view: CompactedView | None = None, *,
                 from_earliest: bool = False) -> None:
        """view gives the topic's compacted view as it is at each read (a compaction may
        replace it); first_position the topic's first stored entry; current_view is the
        view known now, for has_more_entries; from_earliest: the subscription starts at
        the earliest message."""
        self.cursor = cursor
        self._view = view
        self._first_position = first_position
        self._known_view = current_view
        #: Where the next compacted read starts; None: from the cursor's read position.
        self._compacted_next: ml.Position | None = ml.EARLIEST if from_earliest else None
        #: A rewind of a subscription that started at the earliest message and has
        #: acknowledged nothing since goes back to the start of the compacted view.
        self._from_earliest = from_earliest
        self._initial_mark_delete = cursor.mark_delete_position

    def _start(self) -> ml.Position:
        if self._compacted_next is not None:
            return self._compacted_next
        return self.cursor.read_position

    def _unacknowledged(self, entry: ml.Entry) -> bool:
        """Entries of trimmed ledgers have no acknowledgement state left: they are read."""
        return entry.position < self._first_position() or not self.cursor.is_acknowledged(
            entry.position)

    # Reading: the compacted view first

    async def _read_compacted(self, max_entries: int,
                              max_bytes: int | None) -> list[ml.Entry] | None:
        view = await self._view()
        self._known_view = view
        position = self._start()
        if view is None or position > view.horizon:
            return None
        while True:
            chunk = await view.read_from(position, max_entries, max_bytes)
            if not chunk:
                # Nothing left in the view: the topic's entries after the horizon follow.
                self._compacted_next = None
                self.cursor.seek(_after(view.horizon))
                return None
            position = _after(chunk[-1].position)
            entries = [e for e in chunk if self._unacknowledged(e)]
            if entries:
                self._compacted_next = position
                self.cursor.seek(position)
                return entries

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
        if view is not None:
            position = self._start()
            if position <= view.horizon and view.has_entries_from(position):
                return True
        return self.cursor.has_more_entries()

    # Moving: the compacted place follows the cursor

    def rewind(self) -> None:
        untouched = self.cursor.mark_delete_position == self._initial_mark_delete
        self._compacted_next = ml.EARLIEST if self._from_earliest and untouched else None
        self.cursor.rewind()

    def seek(self, read_position: ml.Position) -> None:
        self._compacted_next = read_position
        self.cursor.seek(read_position)

    async def reset_cursor(self, position: ml.Position) -> None:
        self._compacted_next = None
        await self.cursor.reset_cursor(position)

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

    async def delete_batch_indexes(self, position: ml.Position, ack_set: Sequence[int]) -> None:
        await self.cursor.delete_batch_indexes(position, ack_set)

    def batch_ack_set(self, position: ml.Position) -> Sequence[int] | None:
        return self.cursor.batch_ack_set(position)

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
