"""What a cursor has acknowledged: a mark-delete position plus compact ranges after it.

Like Pulsar's cursor, everything at or before the mark-delete position is
acknowledged; individually acknowledged entries after it are kept as maximal
runs of adjacent positions, shown as (lower open, upper closed] ranges. Which
positions are adjacent depends on the ledgers (the last entry of a ledger and
the first of the next are), so the set asks a `LedgerLayout`. When the run
right after the mark-delete position grows, the mark-delete position moves
over it. Pure: no I/O, no clock.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from pulsar_broker.managed_ledger import api, layout

Range = tuple[api.Position, api.Position]


class AckSet:
    """Mark-delete position and individually acknowledged runs after it."""

    def __init__(self, ledger_layout: layout.LedgerLayout, mark_delete: api.Position):
        self._layout = ledger_layout
        self._mark_delete = mark_delete
        # Parallel lists of closed runs [first, last], sorted and never adjacent.
        self._firsts: list[api.Position] = []
        self._lasts: list[api.Position] = []
        self._sizes: list[int] = []
        self._acked_count = 0

    @property
    def mark_delete_position(self) -> api.Position:
        return self._mark_delete

    @property
    def acknowledged_after_mark_delete(self) -> int:
        """How many positions after the mark-delete position are acknowledged."""
        return self._acked_count

    @property
    def range_count(self) -> int:
        return len(self._firsts)

    def ranges(self, limit: int | None = None) -> list[Range]:
        """The runs as (lower open, upper closed] ranges, oldest first, at most limit."""
        count = len(self._firsts) if limit is None else min(limit, len(self._firsts))
        return [(_open_lower(self._firsts[i]), self._lasts[i]) for i in range(count)]

    def is_acknowledged(self, position: api.Position) -> bool:
        if position <= self._mark_delete:
            return True
        i = bisect.bisect_right(self._firsts, position) - 1
        return i >= 0 and position <= self._lasts[i]

    def first_unacknowledged_at_or_after(self, position: api.Position) -> api.Position:
        """`position` if it is not acknowledged, else the first position after it that is not."""
        position = self._layout.at_or_after(position)
        if position <= self._mark_delete:
            position = self._layout.next_position(self._mark_delete)
        i = bisect.bisect_right(self._firsts, position) - 1
        if i >= 0 and position <= self._lasts[i]:
            position = self._layout.next_position(self._lasts[i])
        return position

    def acknowledge(self, position: api.Position) -> bool:
        """Acknowledge one position; False when it already was."""
        if self.is_acknowledged(position):
            return False
        i = bisect.bisect_left(self._firsts, position)
        left = i - 1
        joins_left = left >= 0 and self._layout.next_position(self._lasts[left]) == position
        joins_right = i < len(self._firsts) and (
            self._layout.next_position(position) == self._firsts[i]
        )
        self._acked_count += 1
        if joins_left and joins_right:
            self._lasts[left] = self._lasts[i]
            self._sizes[left] += 1 + self._sizes[i]
            self._delete_run(i)
        elif joins_left:
            self._lasts[left] = position
            self._sizes[left] += 1
        elif joins_right:
            self._firsts[i] = position
            self._sizes[i] += 1
        else:
            self._firsts.insert(i, position)
            self._lasts.insert(i, position)
            self._sizes.insert(i, 1)
        self._advance_mark_delete()
        return True

    def acknowledge_cumulative(self, position: api.Position) -> bool:
        """Acknowledge everything up to position; False when nothing changed."""
        if position <= self._mark_delete:
            return False
        self._mark_delete = position
        while self._firsts and self._firsts[0] <= position:
            if self._lasts[0] <= position:
                self._acked_count -= self._sizes[0]
                self._delete_run(0)
                continue
            remaining = self._layout.count_between(position, self._lasts[0])
            self._acked_count -= self._sizes[0] - remaining
            self._firsts[0] = self._layout.next_position(position)
            self._sizes[0] = remaining
        self._advance_mark_delete()
        return True

    def reset(self, mark_delete: api.Position) -> None:
        """Forget every acknowledgement after mark_delete (and move it there)."""
        self._mark_delete = mark_delete
        self._firsts.clear()
        self._lasts.clear()
        self._sizes.clear()
        self._acked_count = 0

    def load(self, mark_delete: api.Position, ranges: Iterable[Range]) -> None:
        """Restore persisted state: the ranges are re-added entry by entry as runs."""
        self.reset(mark_delete)
        for lower_open, upper_closed in sorted(ranges):
            self._load_run(lower_open, upper_closed)
        self._advance_mark_delete()

    def _load_run(self, lower_open: api.Position, upper_closed: api.Position) -> None:
        lower = max(lower_open, self._mark_delete)
        first = self._layout.next_position(lower)
        if first > upper_closed:
            return
        size = self._layout.count_between(lower, upper_closed)
        if self._firsts and self._layout.next_position(self._lasts[-1]) >= first:
            # Overlapping or adjacent to the previous run: extend it.
            if upper_closed > self._lasts[-1]:
                extra = self._layout.count_between(self._lasts[-1], upper_closed)
                self._lasts[-1] = upper_closed
                self._sizes[-1] += extra
                self._acked_count += extra
            return
        self._firsts.append(first)
        self._lasts.append(upper_closed)
        self._sizes.append(size)
        self._acked_count += size

    def _advance_mark_delete(self) -> None:
        if self._firsts and self._layout.next_position(self._mark_delete) == self._firsts[0]:
            self._mark_delete = self._lasts[0]
            self._acked_count -= self._sizes[0]
            self._delete_run(0)

    def _delete_run(self, i: int) -> None:
        del self._firsts[i]
        del self._lasts[i]
        del self._sizes[i]


def _open_lower(first: api.Position) -> api.Position:
    """The open lower bound of a run starting at first (Pulsar writes (L:e-1, ...])."""
    return api.Position(first.ledger_id, first.entry_id - 1)
