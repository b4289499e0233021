"""Dispatch rate limiting: how many messages and bytes the broker, a topic, or one
subscription of it may deliver per rate period (Apache's dispatchThrottlingRateInMsg/InByte,
dispatchRate and subscriptionDispatchRate).

A limited dimension is a token bucket that holds one period's worth of its
rate, as Apache's broker keeps it, and may go into debt: every entry sent
takes its messages and bytes, and a dispatcher reads only while every bucket
that applies to it is above zero, at most as many messages and bytes as the
tightest one holds. While one is at or below zero the dispatcher waits until
it refills. The broker's limiter is shared by every subscription of every
topic it serves, a topic's by all its subscriptions; a subscription's is its
own.

Pure: callers pass the time (seconds on a monotonic clock).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

#: Shortest wait before a throttled dispatcher looks again: reads then carry at least this
#: long a share of the rate instead of one message each.
RETRY_MIN_S = 0.01


@dataclasses.dataclass(frozen=True)
class DispatchRate:
    """Messages and bytes per period; zero or less means that dimension is unlimited."""

    messages: int = -1
    bytes: int = -1
    period_s: int = 1
    #: relativeToPublishRate: the limits are added to the topic's current publish rate.
    relative_to_publish_rate: bool = False

    @property
    def limited(self) -> bool:
        return self.messages > 0 or self.bytes > 0

    def plus_publish_rate(self, messages_per_s: float, bytes_per_s: float) -> DispatchRate:
        """The rate in force for a relative rate, given the topic's publish rate."""
        if not self.relative_to_publish_rate:
            return self
        return dataclasses.replace(
            self,
            messages=self.messages + int(messages_per_s * self.period_s) if self.messages > 0
            else self.messages,
            bytes=self.bytes + int(bytes_per_s * self.period_s) if self.bytes > 0 else self.bytes)


@dataclasses.dataclass(frozen=True)
class Quota:
    """What may go out now; None: that dimension is unlimited. A value at or below zero
    means the dispatcher must wait."""

    messages: int | None = None
    bytes: int | None = None

    @property
    def throttled(self) -> bool:
        return (self.messages is not None and self.messages <= 0) or (
            self.bytes is not None and self.bytes <= 0)

    def fit(self, messages: int, size: int) -> tuple[int, int]:
        """A read of at most messages and size bytes, cut down to this quota."""
        if self.messages is not None:
            messages = min(messages, self.messages)
        if self.bytes is not None:
            size = min(size, self.bytes)
        return max(1, messages), max(1, size)

    def tighter(self, other: Quota) -> Quota:
        return Quota(_least(self.messages, other.messages), _least(self.bytes, other.bytes))


def _least(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


class _Bucket:
    """Tokens refilled at rate per period_s up to one period's worth; may go below zero."""

    def __init__(self, rate: int, period_s: int, now_s: float) -> None:
        self.capacity = float(rate)
        self.per_s = rate / max(period_s, 1)
        self.tokens = self.capacity
        self._updated_s = now_s

    def retune(self, rate: int, period_s: int, now_s: float) -> None:
        """A new rate, keeping what the bucket holds (at most the new capacity)."""
        self.refill(now_s)
        self.capacity = float(rate)
        self.per_s = rate / max(period_s, 1)
        self.tokens = min(self.tokens, self.capacity)

    def refill(self, now_s: float) -> None:
        elapsed = max(0.0, now_s - self._updated_s)
        self._updated_s = max(self._updated_s, now_s)
        self.tokens = min(self.capacity, self.tokens + elapsed * self.per_s)

    def wait_s(self) -> float:
        """Seconds until the bucket holds a token again."""
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.per_s


class DispatchRateLimiter:
    """The buckets of one DispatchRate (a topic's or a subscription's)."""

    def __init__(self, rate: DispatchRate, now_s: float) -> None:
        self.rate = rate
        self._messages = (_Bucket(rate.messages, rate.period_s, now_s)
                          if rate.messages > 0 else None)
        self._bytes = _Bucket(rate.bytes, rate.period_s, now_s) if rate.bytes > 0 else None

    def retune(self, rate: DispatchRate, now_s: float) -> bool:
        """Take a new rate limiting the same dimensions without refilling; False when the
        dimensions differ (the caller builds a new limiter)."""
        if (self._messages is None) != (rate.messages <= 0) or \
                (self._bytes is None) != (rate.bytes <= 0):
            return False
        if self._messages is not None:
            self._messages.retune(rate.messages, rate.period_s, now_s)
        if self._bytes is not None:
            self._bytes.retune(rate.bytes, rate.period_s, now_s)
        self.rate = rate
        return True

    def _buckets(self) -> list[_Bucket]:
        return [b for b in (self._messages, self._bytes) if b is not None]

    def quota(self, now_s: float) -> Quota:
        for bucket in self._buckets():
            bucket.refill(now_s)
        return Quota(None if self._messages is None else int(self._messages.tokens),
                     None if self._bytes is None else int(self._bytes.tokens))

    def record(self, messages: int, size: int, now_s: float) -> None:
        """Take what an entry sent carried."""
        if self._messages is not None:
            self._messages.refill(now_s)
            self._messages.tokens -= messages
        if self._bytes is not None:
            self._bytes.refill(now_s)
            self._bytes.tokens -= size

    def wait_s(self, now_s: float) -> float:
        """Seconds until every bucket holds a token again."""
        for bucket in self._buckets():
            bucket.refill(now_s)
        return max((b.wait_s() for b in self._buckets()), default=0.0)


def broker_rate(messages_per_s: int, bytes_per_s: int) -> DispatchRate:
    """The broker-wide rate: dispatchThrottlingRateInMsg/InByte, per second (0: unlimited)."""
    return DispatchRate(messages_per_s, bytes_per_s, period_s=1)


class RateSlot:
    """A limiter that follows a rate read at each use: a new (full) one when the limited
    dimensions change, the same one retuned when only the numbers do (a relative rate moves
    with the publish rate), none while the rate is unlimited."""

    def __init__(self, rate: Callable[[float], DispatchRate]) -> None:
        self._rate = rate
        self._limiter: DispatchRateLimiter | None = None

    def limiter(self, now_s: float) -> DispatchRateLimiter | None:
        rate = self._rate(now_s)
        if not rate.limited:
            self._limiter = None
        elif self._limiter is None or self._limiter.rate != rate and not self._limiter.retune(rate, now_s):
            self._limiter = DispatchRateLimiter(rate, now_s)
        return self._limiter


class DispatchThrottle:
    """The limiters one subscription's dispatcher obeys: the broker's (a slot shared by every
    subscription of the broker), its topic's (shared by every subscription of the topic) and
    its own."""

    def __init__(self, slots: Sequence[RateSlot]) -> None:
        self._slots = list(slots)
        #: The limiters found by the last quota(); record() charges these.
        self._active: list[DispatchRateLimiter] = []

    @property
    def active(self) -> bool:
        return bool(self._active)

    def quota(self, now_s: float) -> Quota | None:
        """What may go out now, or None when nothing limits this subscription."""
        self._active = [limiter for slot in self._slots
                        if (limiter := slot.limiter(now_s)) is not None]
        if not self._active:
            return None
        quota = Quota()
        for limiter in self._active:
            quota = quota.tighter(limiter.quota(now_s))
        return quota

    def record(self, messages: int, size: int, now_s: float) -> None:
        for limiter in self._active:
            limiter.record(messages, size, now_s)

    def wait_s(self, now_s: float) -> float:
        """Seconds a throttled dispatcher waits before it looks again."""
        longest = max((limiter.wait_s(now_s) for limiter in self._active), default=0.0)
        return max(RETRY_MIN_S, longest)
