"""Time as the managed ledger sees it: a `now_ms` function, injectable so tests can drive it."""

from __future__ import annotations

import time


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class ManualClock:
    """A clock that moves only when told to (tests, simulations)."""

    def __init__(self, start_ms: int = 1_700_000_000_000):
        self._now_ms = start_ms

    def __call__(self) -> int:
        return self._now_ms

    def advance(self, *, ms: int = 0, seconds: float = 0, minutes: float = 0) -> None:
        self._now_ms += ms + int(seconds * 1000) + int(minutes * 60_000)
