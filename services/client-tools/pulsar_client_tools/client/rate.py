"""Pacing of sends and receives to a target rate (messages per second; 0 means as fast as possible)."""

from __future__ import annotations

import time
from collections.abc import Callable


class RateLimiter:
    """Spaces permits evenly at `rate` per second, catching up a short burst after a stall.

    The burst is capped at one second's worth of permits so that a pause (a
    slow broker, a full queue) does not turn into an unbounded flood afterwards.
    """

    def __init__(
        self,
        rate: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.rate = rate
        self._clock = clock
        self._sleep = sleep
        self._next = clock()

    def acquire(self) -> None:
        if self.rate <= 0:
            return
        now = self._clock()
        burst_floor = now - 1.0
        self._next = max(self._next, burst_floor)
        if self._next > now:
            self._sleep(self._next - now)
        self._next += 1.0 / self.rate
