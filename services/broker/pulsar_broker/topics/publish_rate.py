"""Publish rate limiting per topic (the namespace's publishRate, Apache's PublishRate), and
the measured publish rate a relative dispatch rate adds to its limits.

A token bucket per limited dimension (messages and bytes per second) that
may go into debt: every SEND takes what it carries; when a bucket is below
zero the connection that sent it stops reading until the debt is paid back
at the configured rate. Over time a producer therefore gets the configured
rate, whatever its batch sizes, as Apache's broker does by pausing the
channel's reads. A bucket holds at most BURST_S worth of its rate, so a
producer that was idle (or a broker that stalled) catches up by at most that
much. Pure: the caller passes the time.
"""

from __future__ import annotations

import dataclasses

#: Seconds of the rate a bucket holds when full: the largest burst after a quiet spell.
BURST_S = 0.1


@dataclasses.dataclass(frozen=True)
class PublishRate:
    """Limits per second; zero or less means that dimension is unlimited."""

    messages_per_s: int = -1
    bytes_per_s: int = -1

    @property
    def limited(self) -> bool:
        return self.messages_per_s > 0 or self.bytes_per_s > 0


class PublishRateLimiter:
    """Token buckets for one topic; `record` returns how long the sender must pause."""

    def __init__(self, rate: PublishRate, now_s: float) -> None:
        self.rate = rate
        self._updated_s = now_s
        self._messages_max = max(rate.messages_per_s * BURST_S, 1.0)
        self._bytes_max = max(rate.bytes_per_s * BURST_S, 1.0)
        self._messages = self._messages_max
        self._bytes = self._bytes_max

    def _refill(self, now_s: float) -> None:
        elapsed = max(0.0, now_s - self._updated_s)
        self._updated_s = now_s
        if self.rate.messages_per_s > 0:
            self._messages = min(self._messages_max,
                                 self._messages + elapsed * self.rate.messages_per_s)
        if self.rate.bytes_per_s > 0:
            self._bytes = min(self._bytes_max, self._bytes + elapsed * self.rate.bytes_per_s)

    def record(self, messages: int, size: int, now_s: float) -> float:
        """Take a SEND's messages and bytes; seconds to stop reading (0.0: go on)."""
        self._refill(now_s)
        pause_s = 0.0
        if self.rate.messages_per_s > 0:
            self._messages -= messages
            if self._messages < 0:
                pause_s = max(pause_s, -self._messages / self.rate.messages_per_s)
        if self.rate.bytes_per_s > 0:
            self._bytes -= size
            if self._bytes < 0:
                pause_s = max(pause_s, -self._bytes / self.rate.bytes_per_s)
        return pause_s


#: Seconds a measured publish rate averages over (and is refreshed after).
METER_WINDOW_S = 1.0


class PublishMeter:
    """A topic's publish rate, from its running totals, refreshed once a window has passed."""

    def __init__(self) -> None:
        self._sample: tuple[float, int, int] | None = None
        self.messages_per_s = 0.0
        self.bytes_per_s = 0.0

    def update(self, messages_total: int, bytes_total: int, now_s: float) -> tuple[float, float]:
        """(messages, bytes) per second as of now_s, given the totals so far."""
        if self._sample is None:
            self._sample = (now_s, messages_total, bytes_total)
        elapsed = now_s - self._sample[0]
        if elapsed >= METER_WINDOW_S:
            self.messages_per_s = max(0, messages_total - self._sample[1]) / elapsed
            self.bytes_per_s = max(0, bytes_total - self._sample[2]) / elapsed
            self._sample = (now_s, messages_total, bytes_total)
        return self.messages_per_s, self.bytes_per_s
