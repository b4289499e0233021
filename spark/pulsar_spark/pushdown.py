"""What pushed-down filters let a scan skip: partitions, and entries outside a publish-time range.

Filters arrive as (column, operator, value) triples, converted from Spark's
filter objects by the data source adapter. Every filter is still evaluated
by Spark after the scan, so pruning only has to be safe (never drop a row
that could match), not exact.

Publish time is stamped by each producer's clock, so entries of a ledger are
only roughly in publish-time order. The search for the entry range pads the
bounds by a tolerance; messages further out of order than that may be missed
(documented with the `publishTime.toleranceMs` option).
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable, Iterable, Sequence
from typing import Any

PUBLISH_TIME = "__publish_time"
PARTITION = "__partition"

#: (column, operator, value); operator one of = < <= > >= in.
Condition = tuple[str, str, Any]


@dataclasses.dataclass(frozen=True)
class TimeRange:
    """Publish-time bounds in epoch ms, inclusive; None is unbounded."""

    low_ms: int | None = None
    high_ms: int | None = None

    @property
    def bounded(self) -> bool:
        return self.low_ms is not None or self.high_ms is not None

    def padded(self, tolerance_ms: int) -> TimeRange:
        return TimeRange(None if self.low_ms is None else self.low_ms - tolerance_ms,
                         None if self.high_ms is None else self.high_ms + tolerance_ms)

    def intersect(self, other: TimeRange) -> TimeRange:
        lows = [x for x in (self.low_ms, other.low_ms) if x is not None]
        highs = [x for x in (self.high_ms, other.high_ms) if x is not None]
        return TimeRange(max(lows) if lows else None, min(highs) if highs else None)


def to_epoch_ms(value: Any) -> int | None:
    """Spark hands timestamps over as datetimes (naive ones are in UTC)."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return int(value.timestamp() * 1000)
    if isinstance(value, int | float):
        return int(value)
    return None


def publish_time_range(conditions: Iterable[Condition]) -> TimeRange:
    """Bounds implied by the AND of the conditions on __publish_time."""
    result = TimeRange()
    for column, op, value in conditions:
        if column != PUBLISH_TIME:
            continue
        ms = to_epoch_ms(value)
        if ms is None:
            continue
        if op == "=":
            result = result.intersect(TimeRange(ms, ms))
        elif op in (">", ">="):
            result = result.intersect(TimeRange(ms, None))
        elif op in ("<", "<="):
            result = result.intersect(TimeRange(None, ms))
    return result


def allowed_partitions(conditions: Iterable[Condition],
                       indices: Sequence[int]) -> frozenset[int] | None:
    """Partition indices passing every condition on __partition; None when none constrain it."""
    allowed: set[int] | None = None
    checks: dict[str, Callable[[int, Any], bool]] = {
        "=": lambda i, v: i == v, "<": lambda i, v: i < v, "<=": lambda i, v: i <= v,
        ">": lambda i, v: i > v, ">=": lambda i, v: i >= v, "in": lambda i, v: i in v,
    }
    for column, op, value in conditions:
        if column != PARTITION or op not in checks:
            continue
        passing = {i for i in indices if checks[op](i, value)}
        allowed = passing if allowed is None else allowed & passing
    return None if allowed is None else frozenset(allowed)


def first_at_or_after(probe: Callable[[int], int], first: int, last: int, low_ms: int) -> int:
    """Smallest entry id in first..last whose publish time is >= low_ms (last+1 if none).

    The last entry is probed first, so a ledger wholly before the bound costs one read.
    """
    if first > last or probe(last) < low_ms:
        return last + 1
    lo, hi = first, last
    while lo < hi:
        mid = (lo + hi) // 2
        if probe(mid) >= low_ms:
            hi = mid
        else:
            lo = mid + 1
    return lo


def last_at_or_before(probe: Callable[[int], int], first: int, last: int, high_ms: int) -> int:
    """Largest entry id in first..last whose publish time is <= high_ms (first-1 if none).

    The first entry is probed first, so a ledger wholly after the bound costs one read.
    """
    if first > last or probe(first) > high_ms:
        return first - 1
    lo, hi = first, last
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if probe(mid) <= high_ms:
            lo = mid
        else:
            hi = mid - 1
    return lo


def narrow(probe: Callable[[int], int], first: int, last: int,
           bounds: TimeRange) -> tuple[int, int] | None:
    """The entry range of first..last that may hold publish times within bounds."""
    if bounds.low_ms is not None:
        first = first_at_or_after(probe, first, last, bounds.low_ms)
    if bounds.high_ms is not None and first <= last:
        last = last_at_or_before(probe, first, last, bounds.high_ms)
    return (first, last) if first <= last else None
