"""Per-topic add-entry statistics in Apache's bucket layout: write latency and entry size.

Apache's broker reports, per topic (or namespace), how many entries fell in
each latency bucket (`pulsar_storage_write_latency_le_0_5` ... `_le_1000`,
`_le_overflow`) and each size bucket (`pulsar_entry_size_le_128` ...
`_le_1_mb`, `_le_overflow`), with `_count` and `_sum`. Buckets here are not
cumulative (an entry counts in the first bucket whose bound it does not
exceed), as in Apache's StatsBuckets. Recording is a bisect and three
additions: cheap enough for every entry on the publish path.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence

#: Upper bounds in ms and their series suffixes (Apache's names).
WRITE_LATENCY_BOUNDS_MS: Sequence[float] = (0.5, 1, 5, 10, 20, 50, 100, 200, 1000)
WRITE_LATENCY_SUFFIXES = ("0_5", "1", "5", "10", "20", "50", "100", "200", "1000", "overflow")
#: Upper bounds in bytes and their series suffixes.
ENTRY_SIZE_BOUNDS: Sequence[int] = (128, 512, 1024, 2048, 4096, 16384, 102400, 1048576)
ENTRY_SIZE_SUFFIXES = ("128", "512", "1_kb", "2_kb", "4_kb", "16_kb", "100_kb", "1_mb", "overflow")

WRITE_LATENCY = "pulsar_storage_write_latency"
ENTRY_SIZE = "pulsar_entry_size"


class EntryStats:
    """Counts of the entries a topic added, by write latency and by size."""

    __slots__ = ("latency_counts", "latency_sum_ms", "size_counts", "size_sum", "count")

    def __init__(self) -> None:
        self.latency_counts = [0] * len(WRITE_LATENCY_SUFFIXES)
        self.size_counts = [0] * len(ENTRY_SIZE_SUFFIXES)
        self.latency_sum_ms = 0.0
        self.size_sum = 0
        self.count = 0

    def record(self, latency_ms: float, size_bytes: int) -> None:
        self.latency_counts[bisect.bisect_left(WRITE_LATENCY_BOUNDS_MS, latency_ms)] += 1
        self.size_counts[bisect.bisect_left(ENTRY_SIZE_BOUNDS, size_bytes)] += 1
        self.latency_sum_ms += latency_ms
        self.size_sum += size_bytes
        self.count += 1

    def add(self, other: EntryStats) -> None:
        """Fold other's counts into these (a namespace's totals over its topics)."""
        for i, value in enumerate(other.latency_counts):
            self.latency_counts[i] += value
        for i, value in enumerate(other.size_counts):
            self.size_counts[i] += value
        self.latency_sum_ms += other.latency_sum_ms
        self.size_sum += other.size_sum
        self.count += other.count

    def series(self) -> Iterator[tuple[str, float]]:
        """(series name, value) in Apache's naming: every bucket, then _count and _sum."""
        for suffix, value in zip(WRITE_LATENCY_SUFFIXES, self.latency_counts, strict=True):
            yield f"{WRITE_LATENCY}_le_{suffix}", value
        yield f"{WRITE_LATENCY}_count", self.count
        yield f"{WRITE_LATENCY}_sum", self.latency_sum_ms
        for suffix, value in zip(ENTRY_SIZE_SUFFIXES, self.size_counts, strict=True):
            yield f"{ENTRY_SIZE}_le_{suffix}", value
        yield f"{ENTRY_SIZE}_count", self.count
        yield f"{ENTRY_SIZE}_sum", self.size_sum


def series_names() -> list[str]:
    return [name for name, _ in EntryStats().series()]
