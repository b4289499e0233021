"""A counter and the rate it grew at between two looks (Apache's msgDropRate)."""

from __future__ import annotations

import time
from collections.abc import Callable


class DropCounter:
    """Counts dropped messages; `rate()` is drops per second since the previous call."""

    def __init__(self, now_s: Callable[[], float] = time.monotonic) -> None:
        self.total = 0
        self._now_s = now_s
        self._since = now_s()
        self._at_last_look = 0
        self._last_rate = 0.0

    def add(self, count: int) -> None:
        self.total += count

    def rate(self) -> float:
        now = self._now_s()
        elapsed = now - self._since
        if elapsed > 0:
            self._last_rate = (self.total - self._at_last_look) / elapsed
            self._since = now
            self._at_last_look = self.total
        return self._last_rate
