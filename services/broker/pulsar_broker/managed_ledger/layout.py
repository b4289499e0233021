"""Which positions exist in a managed ledger, as a pure value (no I/O).

A managed ledger is a sequence of ledgers; entry ids inside a ledger run
0..entries-1 without gaps. Closed ledgers have a known entry count; the open
(current) ledger grows, so every entry id in it is a position that exists or
will exist. Cursors need this to tell whether two acknowledged positions are
adjacent (the last entry of one ledger and the first of the next are), to
count a backlog, and to step over empty or deleted ledgers.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pulsar_broker.managed_ledger import api


@dataclass(frozen=True)
class LedgerSpan:
    ledger_id: int
    #: Entries in the ledger; ignored for the open ledger, which has no end yet.
    entries: int


class LedgerLayout:
    """The ordered ledgers of one managed ledger and the positions they hold."""

    def __init__(self, closed: Iterable[LedgerSpan] = (), open_ledger_id: int | None = None):
        spans = sorted(closed, key=lambda s: s.ledger_id)
        self._ids: list[int] = [s.ledger_id for s in spans]
        self._entries: list[int] = [s.entries for s in spans]
        self._open: int | None = None
        if open_ledger_id is not None:
            self.add_open_ledger(open_ledger_id)

    # -- changes -------------------------------------------------------------

    def add_open_ledger(self, ledger_id: int) -> None:
        """Start a new current ledger; it must come after every known ledger."""
        if self._open is not None:
            raise ValueError(f"ledger {self._open} is still open")
        if self._ids and ledger_id <= self._ids[-1]:
            raise ValueError(f"ledger {ledger_id} is not after {self._ids[-1]}")
        self._ids.append(ledger_id)
        self._entries.append(0)
        self._open = ledger_id

    def add_closed_ledger(self, ledger_id: int, entries: int) -> None:
        if self._open is not None or (self._ids and ledger_id <= self._ids[-1]):
            raise ValueError(f"closed ledger {ledger_id} cannot be appended here")
        self._ids.append(ledger_id)
        self._entries.append(entries)

    def close_open_ledger(self, entries: int) -> None:
        """The current ledger is sealed with this many entries."""
        if self._open is None:
            raise ValueError("no open ledger")
        self._entries[-1] = entries
        self._open = None

    def remove_ledger(self, ledger_id: int) -> None:
        i = self._index(ledger_id)
        if i is None:
            return
        if self._open == ledger_id:
            raise ValueError("the open ledger cannot be removed")
        del self._ids[i]
        del self._entries[i]

    # -- queries -------------------------------------------------------------

    @property
    def open_ledger_id(self) -> int | None:
        return self._open

    @property
    def ledger_ids(self) -> list[int]:
        return list(self._ids)

    def entries_of(self, ledger_id: int) -> int | None:
        """Entry count of a closed ledger; None for the open one or an unknown one."""
        i = self._index(ledger_id)
        if i is None or ledger_id == self._open:
            return None
        return self._entries[i]

    def exists(self, position: api.Position) -> bool:
        i = self._index(position.ledger_id)
        if i is None or position.entry_id < 0:
            return False
        return position.ledger_id == self._open or position.entry_id < self._entries[i]

    def next_position(self, position: api.Position) -> api.Position:
        """The first position strictly after `position` that exists or will exist."""
        i = bisect.bisect_left(self._ids, position.ledger_id)
        if i < len(self._ids) and self._ids[i] == position.ledger_id:
            candidate = max(position.entry_id + 1, 0)
            if self._ids[i] == self._open or candidate < self._entries[i]:
                return api.Position(self._ids[i], candidate)
            i += 1
        for j in range(i, len(self._ids)):
            if self._ids[j] == self._open or self._entries[j] > 0:
                return api.Position(self._ids[j], 0)
        # Past the end of a log that has no open ledger: nothing will ever be there.
        return api.Position(position.ledger_id, position.entry_id + 1)

    def at_or_after(self, position: api.Position) -> api.Position:
        """`position` itself when it exists, else the next one that does."""
        if self.exists(position):
            return position
        return self.next_position(position)

    def previous_position(self, position: api.Position) -> api.Position:
        """The position whose next is `position`, as a mark-delete position would be."""
        if position.entry_id > 0:
            return api.Position(position.ledger_id, position.entry_id - 1)
        i = bisect.bisect_left(self._ids, position.ledger_id)
        for j in range(i - 1, -1, -1):
            if self._entries[j] > 0:
                return api.Position(self._ids[j], self._entries[j] - 1)
        return api.Position(position.ledger_id, -1)

    def count_between(self, lower_open: api.Position, upper_closed: api.Position) -> int:
        """How many positions lie in (lower_open, upper_closed]."""
        if upper_closed <= lower_open:
            return 0
        return self._count_up_to(upper_closed) - self._count_up_to(lower_open)

    def _count_up_to(self, position: api.Position) -> int:
        """Positions at or before `position`; the open ledger counts up to the position."""
        total = 0
        for ledger_id, entries in zip(self._ids, self._entries, strict=True):
            if ledger_id > position.ledger_id:
                break
            if ledger_id < position.ledger_id:
                # The open ledger is the last one, so it is never wholly before a position
                # that callers ask about (they stay at or below the last confirmed entry).
                total += entries
            elif ledger_id == self._open:
                total += max(position.entry_id + 1, 0)
            else:
                total += max(min(entries, position.entry_id + 1), 0)
        return total

    def advance(self, position: api.Position, steps: int) -> api.Position:
        """The position `steps` (>= 1) positions after `position`."""
        while steps > 1:
            i = self._index(position.ledger_id)
            entry_id = max(position.entry_id, -1)
            if i is not None and self._ids[i] == self._open:
                return api.Position(position.ledger_id, entry_id + steps)
            left = 0 if i is None else self._entries[i] - 1 - entry_id
            if left >= steps:
                return api.Position(position.ledger_id, entry_id + steps)
            if left > 0:
                steps -= left
                position = api.Position(position.ledger_id, entry_id + left)
            position = self.next_position(position)
            steps -= 1
        return self.next_position(position) if steps == 1 else position

    def iter_positions(
        self, after: api.Position, up_to: api.Position
    ) -> Iterator[api.Position]:
        """Positions in (after, up_to], in log order."""
        position = self.next_position(after)
        while position <= up_to:
            yield position
            position = self.next_position(position)

    def _index(self, ledger_id: int) -> int | None:
        i = bisect.bisect_left(self._ids, ledger_id)
        if i < len(self._ids) and self._ids[i] == ledger_id:
            return i
        return None
