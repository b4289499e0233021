"""Latency histograms with bounded relative error, in the spirit of HdrHistogram.

Values (microseconds) are counted in log-linear buckets: exact below
2**SIGNIFICANT_BITS, above that each power of two is split into
2**(SIGNIFICANT_BITS - 1) equal buckets, so a reported percentile is within
about 1% of the true value, and memory stays bounded (a few thousand buckets
at most for any latency a broker can produce).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

SIGNIFICANT_BITS = 7
PERCENTILES = (50.0, 95.0, 99.0, 99.9, 99.99)


def bucket_of(value: int) -> int:
    """The lowest value of the bucket `value` falls in."""
    value = max(value, 0)
    shift = value.bit_length() - SIGNIFICANT_BITS
    if shift <= 0:
        return value
    return (value >> shift) << shift


def bucket_width(bucket: int) -> int:
    shift = bucket.bit_length() - SIGNIFICANT_BITS
    return 1 << shift if shift > 0 else 1


@dataclass(frozen=True)
class LatencySummary:
    """Percentiles of one histogram, in milliseconds."""

    count: int
    mean_ms: float
    percentiles_ms: dict[float, float]
    max_ms: float

    def percentile_ms(self, percentile: float) -> float:
        return self.percentiles_ms[percentile]


class Histogram:
    """Counts of values in buckets; not thread-safe (see Recorder)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.count = 0
        self.total = 0
        self.max = 0

    def record(self, value_us: int) -> None:
        bucket = bucket_of(value_us)
        self.counts[bucket] = self.counts.get(bucket, 0) + 1
        self.count += 1
        self.total += value_us
        self.max = max(self.max, value_us)

    def add(self, other: Histogram) -> None:
        for bucket, count in other.counts.items():
            self.counts[bucket] = self.counts.get(bucket, 0) + count
        self.count += other.count
        self.total += other.total
        self.max = max(self.max, other.max)

    def value_at(self, percentile: float) -> int:
        """The value below which `percentile` percent of the recorded values are (bucket middle)."""
        if self.count == 0:
            return 0
        rank = max(1, -(-self.count * percentile // 100))
        seen = 0
        for bucket in sorted(self.counts):
            seen += self.counts[bucket]
            if seen >= rank:
                return min(bucket + bucket_width(bucket) // 2, self.max)
        return self.max

    def summary(self) -> LatencySummary:
        mean = self.total / self.count if self.count else 0.0
        return LatencySummary(
            count=self.count,
            mean_ms=mean / 1000.0,
            percentiles_ms={p: self.value_at(p) / 1000.0 for p in PERCENTILES},
            max_ms=self.max / 1000.0,
        )


class Recorder:
    """A histogram written from client callback threads and read per interval.

    `interval()` hands back what was recorded since the previous call and
    folds it into the cumulative histogram used for the final summary.
    """

    def __init__(self, warmup_s: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._current = Histogram()
        self.cumulative = Histogram()
        #: Samples recorded before this monotonic time are dropped (the warm-up).
        self._record_from = time.monotonic() + max(0.0, warmup_s)

    def start_warmup(self, warmup_s: float) -> None:
        """Drop samples for warmup_s from now (call when the run starts)."""
        self._record_from = time.monotonic() + max(0.0, warmup_s)

    def record(self, value_us: int) -> None:
        if time.monotonic() < self._record_from:
            return
        with self._lock:
            self._current.record(value_us)

    def interval(self) -> Histogram:
        with self._lock:
            done, self._current = self._current, Histogram()
        self.cumulative.add(done)
        return done


def distribution_text(histogram: Histogram) -> str:
    """The latency distribution as a percentile table (values in ms), as HdrHistogram prints
    it: Value, Percentile, TotalCount, 1/(1-Percentile)."""
    lines = [f"{'Value':>12} {'Percentile':>14} {'TotalCount':>10} {'1/(1-Percentile)':>14}", ""]
    seen = 0
    for bucket in sorted(histogram.counts):
        seen += histogram.counts[bucket]
        fraction = seen / histogram.count
        inverse = f"{1 / (1 - fraction):14.2f}" if fraction < 1 else f"{'inf':>14}"
        value_ms = min(bucket + bucket_width(bucket) // 2, histogram.max) / 1000.0
        lines.append(f"{value_ms:12.3f} {fraction:14.12f} {seen:10d} {inverse}")
    mean = histogram.total / histogram.count / 1000.0 if histogram.count else 0.0
    lines += ["", f"#[Mean    = {mean:12.3f}, Max = {histogram.max / 1000.0:12.3f}]",
              f"#[Total count    = {histogram.count:12d}]"]
    return "\n".join(lines) + "\n"
