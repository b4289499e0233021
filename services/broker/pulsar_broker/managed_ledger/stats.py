"""What a managed ledger and the entry cache count as they work, for the broker's metrics.

The events Apache's ManagedLedgerMBeanImpl and ManagedLedgerFactoryMBeanImpl
record: adds that succeeded or failed (with their latency buckets, from the
add call and from the hand-over to the ledger, and size buckets), ledger switches (with their latency buckets), entries read and read
errors, entries that missed the cache, mark-delete moves; and for the cache,
hits and misses (with bytes), evictions, entries inserted and evicted.
Counters only grow from the moment the managed ledger (or the cache) is made;
whoever reports rates takes two `snapshot`s and subtracts (`Counts.minus`).
Recording an add is a bisect per bucket list and a few additions: it is on
the publish path.

Bucket bounds are Apache's (ENTRY_LATENCY_BUCKETS_USEC in ms and
ENTRY_SIZE_BUCKETS_BYTES); a value counts in the first bucket whose bound it
does not exceed, the last bucket holds what exceeds every bound (OVERFLOW).
"""

from __future__ import annotations

import bisect
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Upper bounds of the add and ledger-switch latency buckets, in ms.
LATENCY_BOUNDS_MS: Sequence[float] = (0.5, 1, 5, 10, 20, 50, 100, 200, 1000)
#: Upper bounds of the entry size buckets, in bytes.
ENTRY_SIZE_BOUNDS: Sequence[int] = (128, 512, 1024, 2048, 4096, 16384, 102400, 1232896)


class ManagedLedgerStats:
    """Counters of one managed ledger since it was opened."""

    __slots__ = ("add_bytes", "add_errors", "add_latency_counts", "adds_succeeded",
                 "cache_missed_entries", "entries_read", "entry_size_counts",
                 "ledger_add_latency_counts", "ledger_switch_counts", "mark_deletes",
                 "read_bytes", "read_errors")

    def __init__(self) -> None:
        self.adds_succeeded = 0
        self.add_bytes = 0
        #: Adds accepted that then failed (timed out, fenced, refused by the bookies).
        self.add_errors = 0
        self.add_latency_counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        #: The same adds by latency from their hand-over to the ledger (the bookies' part).
        self.ledger_add_latency_counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        self.entry_size_counts = [0] * (len(ENTRY_SIZE_BOUNDS) + 1)
        self.ledger_switch_counts = [0] * (len(LATENCY_BOUNDS_MS) + 1)
        self.entries_read = 0
        self.read_bytes = 0
        #: Reads of entries (from the cache or the bookies) that failed.
        self.read_errors = 0
        #: Entries read from the bookies because the cache did not hold them.
        self.cache_missed_entries = 0
        #: Moves of a durable cursor's mark-delete position.
        self.mark_deletes = 0

    def add_succeeded(self, latency_ms: float, ledger_latency_ms: float, size_bytes: int) -> None:
        """An add became durable latency_ms after add_entry was called, ledger_latency_ms
        after it was handed to its ledger."""
        self.adds_succeeded += 1
        self.add_bytes += size_bytes
        self.add_latency_counts[bisect.bisect_left(LATENCY_BOUNDS_MS, latency_ms)] += 1
        self.ledger_add_latency_counts[
            bisect.bisect_left(LATENCY_BOUNDS_MS, ledger_latency_ms)] += 1
        self.entry_size_counts[bisect.bisect_left(ENTRY_SIZE_BOUNDS, size_bytes)] += 1

    def ledger_switched(self, latency_ms: float) -> None:
        """A rollover took latency_ms from its start until the new ledger took adds."""
        self.ledger_switch_counts[bisect.bisect_left(LATENCY_BOUNDS_MS, latency_ms)] += 1

    def unchanged_since(self, counts: Counts) -> bool:
        """Whether every counter still has its value in counts (a snapshot of these
        counters): what a sampler checks before taking a new snapshot of an idle ledger."""
        return (self.adds_succeeded == counts.adds_succeeded
                and self.add_bytes == counts.add_bytes
                and self.add_errors == counts.add_errors
                and self.entries_read == counts.entries_read
                and self.read_bytes == counts.read_bytes
                and self.read_errors == counts.read_errors
                and self.cache_missed_entries == counts.cache_missed_entries
                and self.mark_deletes == counts.mark_deletes
                and _same_counts(self.add_latency_counts, counts.add_latency_counts)
                and _same_counts(self.ledger_add_latency_counts,
                                 counts.ledger_add_latency_counts)
                and _same_counts(self.entry_size_counts, counts.entry_size_counts)
                and _same_counts(self.ledger_switch_counts, counts.ledger_switch_counts))

    def snapshot(self) -> Counts:
        return Counts(
            self.adds_succeeded, self.add_bytes, self.add_errors, tuple(self.add_latency_counts),
            tuple(self.ledger_add_latency_counts), tuple(self.entry_size_counts),
            tuple(self.ledger_switch_counts), self.entries_read, self.read_bytes,
            self.read_errors, self.cache_missed_entries, self.mark_deletes)


@dataclass(frozen=True)
class Counts:
    """A managed ledger's counters at one moment, or their growth between two moments."""

    adds_succeeded: int = 0
    add_bytes: int = 0
    add_errors: int = 0
    add_latency_counts: tuple[int, ...] = (0,) * (len(LATENCY_BOUNDS_MS) + 1)
    ledger_add_latency_counts: tuple[int, ...] = (0,) * (len(LATENCY_BOUNDS_MS) + 1)
    entry_size_counts: tuple[int, ...] = (0,) * (len(ENTRY_SIZE_BOUNDS) + 1)
    ledger_switch_counts: tuple[int, ...] = (0,) * (len(LATENCY_BOUNDS_MS) + 1)
    entries_read: int = 0
    read_bytes: int = 0
    read_errors: int = 0
    cache_missed_entries: int = 0
    mark_deletes: int = 0

    def minus(self, earlier: Counts) -> Counts:
        """What was counted after earlier (never below zero)."""
        return _combine(self, earlier, lambda mine, theirs: max(0, mine - theirs))

    def plus(self, other: Counts) -> Counts:
        return _combine(self, other, operator.add)


@dataclass(frozen=True)
class CacheCounts:
    """The entry cache at one moment: what it holds, and its counters since it was made."""

    used_bytes: int = 0
    entries: int = 0
    hits: int = 0
    hit_bytes: int = 0
    misses: int = 0
    miss_bytes: int = 0
    #: Times the cache had to evict entries to make room for a new one.
    evictions: int = 0
    inserted_entries: int = 0
    evicted_entries: int = 0


def _same_counts(live: list[int], taken: tuple[int, ...]) -> bool:
    return len(live) == len(taken) and all(map(operator.eq, live, taken))


def _combine(a: Counts, b: Counts, combine: Callable[[int, int], int]) -> Counts:
    def each(x: tuple[int, ...], y: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(combine(p, q) for p, q in zip(x, y, strict=True))

    return Counts(
        adds_succeeded=combine(a.adds_succeeded, b.adds_succeeded),
        add_bytes=combine(a.add_bytes, b.add_bytes),
        add_errors=combine(a.add_errors, b.add_errors),
        add_latency_counts=each(a.add_latency_counts, b.add_latency_counts),
        ledger_add_latency_counts=each(a.ledger_add_latency_counts, b.ledger_add_latency_counts),
        entry_size_counts=each(a.entry_size_counts, b.entry_size_counts),
        ledger_switch_counts=each(a.ledger_switch_counts, b.ledger_switch_counts),
        entries_read=combine(a.entries_read, b.entries_read),
        read_bytes=combine(a.read_bytes, b.read_bytes),
        read_errors=combine(a.read_errors, b.read_errors),
        cache_missed_entries=combine(a.cache_missed_entries, b.cache_missed_entries),
        mark_deletes=combine(a.mark_deletes, b.mark_deletes))
