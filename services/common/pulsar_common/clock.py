"""Time, as every component takes it: a `now_ms` callable, injectable so tests drive it.

Components that read the wall clock (timestamps stored in metadata, ages compared
against a TTL or a retention limit, schedules) take a `now_ms: clock.NowMs`
argument that defaults to `wall_clock_ms`; a test passes a `ManualClock` and
moves time with `advance`. Deadlines and timeouts inside one process use the
event loop's time (or `time.monotonic()`), which no test needs to move: those
are not this module's business.
"""

from __future__ import annotations

import time
from collections.abc import Callable

#: A source of wall-clock time in milliseconds since the epoch.
NowMs = Callable[[], int]


def wall_clock_ms() -> int:
    """The system's wall clock, in whole milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to (tests, simulations); call it for now_ms."""

    def __init__(self, start_ms: int = 1_700_000_000_000):
        self._now_ms = start_ms

    def __call__(self) -> int:
        return self._now_ms

    def advance(self, *, ms: int = 0, seconds: float = 0, minutes: float = 0) -> None:
        self._now_ms += ms + int(seconds * 1000) + int(minutes * 60_000)
