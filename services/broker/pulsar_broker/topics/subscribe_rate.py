"""Subscribe rate limiting per consumer (Apache's subscribeRate, SubscribeRate policy).

A consumer is known by its client's host, its name and its consumer id, as
Apache's broker knows it; each may subscribe to a topic at most `subscribes`
times per period. Counts start over at every period's end (fixed windows,
as Apache clears its limiters on a timer), so what one period holds is
bounded by the subscribes that period saw. Pure: the caller passes the time.
"""

from __future__ import annotations

import dataclasses

#: (client host, consumer name, consumer id).
ConsumerIdentity = tuple[str, str, int]


@dataclasses.dataclass(frozen=True)
class SubscribeRate:
    """Subscribes per consumer per period; zero or less means unlimited."""

    subscribes: int = -1
    period_s: int = 30

    @property
    def limited(self) -> bool:
        return self.subscribes > 0


class SubscribeRateLimiter:
    def __init__(self, rate: SubscribeRate, now_s: float) -> None:
        self.rate = rate
        self._window_start_s = now_s
        self._counts: dict[ConsumerIdentity, int] = {}

    def try_acquire(self, consumer: ConsumerIdentity, now_s: float) -> bool:
        """Count a subscribe by consumer; False when it is over the rate (refused)."""
        if now_s - self._window_start_s >= max(self.rate.period_s, 1):
            self._window_start_s = now_s
            self._counts.clear()
        count = self._counts.get(consumer, 0)
        if count >= self.rate.subscribes:
            return False
        self._counts[consumer] = count + 1
        return True
