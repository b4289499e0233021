"""The managed-ledger and entry-cache series of `/metrics`, per sampling interval.

Managed ledgers and the entry cache only count (managed_ledger/stats.py);
a LedgerSampler takes their counters at every sampling tick (the broker's
10 s interval, see web/rates.py) and keeps what grew during the last
interval, as Apache's ManagedLedgerMBeanImpl keeps the counts of its last
stats period. From that growth come, per namespace and labelled as Apache
labels them (`cluster`, `namespace="<tenant>/<ns>/persistent"`):
`pulsar_ml_AddEntrySucceed`, `_AddEntryErrors`, `_ReadEntriesSucceeded` and
`_ReadEntriesErrors` (counts during the interval), `_AddEntryWithReplicasBytesRate`,
`_ReadEntriesOpsCacheMissesRate` and `_MarkDeleteRate` (per second), and the
bucket series `_AddEntryLatencyBuckets`, `_LedgerAddEntryLatencyBuckets`,
`_LedgerSwitchLatencyBuckets` and `_EntrySizeBuckets` with a `quantile` label per bucket ("0.0_0.5", ...) plus
an `_OVERFLOW` series each, in entries per second as Apache divides them by
its period. The cache series (`pulsar_ml_cache_*`, label `cluster`) give the
interval's hit and miss rates and throughputs and evictions, and the cache's
size, entries and inserted/evicted totals now. All are gauges, as Apache
serves them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import prometheus_client.metrics_core

from pulsar_broker.managed_ledger import stats


@dataclass(frozen=True)
class LedgerGrowth:
    """What one managed ledger (or a namespace's) counted during the last interval."""

    counts: stats.Counts = field(default_factory=stats.Counts)
    #: Bytes added times the write quorum: what the bookies stored for the adds.
    replicated_add_bytes: int = 0

    def plus(self, other: LedgerGrowth) -> LedgerGrowth:
        return LedgerGrowth(self.counts.plus(other.counts),
                            self.replicated_add_bytes + other.replicated_add_bytes)


class LedgerCounters(NamedTuple):
    """One open managed ledger at a tick: its name, its counters and its write quorum."""

    name: str
    counters: stats.ManagedLedgerStats
    write_quorum: int


#: The growth of a ledger that counted nothing during the interval (shared: it is frozen).
_NO_GROWTH = LedgerGrowth()


class LedgerSampler:
    """Counters at each tick; the growth between the last two ticks."""

    def __init__(self) -> None:
        self._taken: dict[str, tuple[stats.ManagedLedgerStats, stats.Counts]] = {}
        self._growth: dict[str, LedgerGrowth] = {}
        self._cache_taken: stats.CacheCounts | None = None
        self._tick_s: float | None = None
        #: Seconds between the last two ticks (0.0 before the second).
        self.interval_s = 0.0
        self.cache_growth = stats.CacheCounts()

    def growth(self, ledger_name: str) -> LedgerGrowth:
        return self._growth.get(ledger_name, LedgerGrowth())

    def tick(self, ledgers: Iterable[LedgerCounters], cache: stats.CacheCounts,
             now_s: float) -> None:
        first = self._tick_s is None
        self.interval_s = 0.0 if self._tick_s is None else max(0.0, now_s - self._tick_s)
        self._tick_s = now_s
        taken: dict[str, tuple[stats.ManagedLedgerStats, stats.Counts]] = {}
        growth: dict[str, LedgerGrowth] = {}
        for name, counters, write_quorum in ledgers:
            previous = self._taken.get(name)
            if previous is not None and previous[0] is counters and (
                    counters.unchanged_since(previous[1])):
                # An idle ledger: nothing grew, and its last snapshot still holds.
                taken[name] = previous
                if not first:
                    growth[name] = _NO_GROWTH
                continue
            counts = counters.snapshot()
            taken[name] = (counters, counts)
            if first:
                continue
            # A managed ledger opened since the last tick (or reopened) counted from zero.
            grown = counts if previous is None or previous[0] is not counters else (
                counts.minus(previous[1]))
            growth[name] = LedgerGrowth(grown, grown.add_bytes * write_quorum)
        self._taken, self._growth = taken, growth
        if self._cache_taken is not None:
            self.cache_growth = _cache_minus(cache, self._cache_taken)
        self._cache_taken = cache


def _cache_minus(now: stats.CacheCounts, before: stats.CacheCounts) -> stats.CacheCounts:
    return stats.CacheCounts(
        used_bytes=now.used_bytes, entries=now.entries,
        hits=max(0, now.hits - before.hits),
        hit_bytes=max(0, now.hit_bytes - before.hit_bytes),
        misses=max(0, now.misses - before.misses),
        miss_bytes=max(0, now.miss_bytes - before.miss_bytes),
        evictions=max(0, now.evictions - before.evictions),
        inserted_entries=max(0, now.inserted_entries - before.inserted_entries),
        evicted_entries=max(0, now.evicted_entries - before.evicted_entries))


def quantile_labels(bounds: Sequence[float]) -> list[str]:
    """Apache's `quantile` values of a bucket series: "0.0_0.5", "0.5_1.0", ... (one per
    bound; the last bucket is the series' _OVERFLOW twin)."""
    lows = [0.0, *bounds[:-1]]
    return [f"{low:.1f}_{high:.1f}" for low, high in zip(lows, bounds, strict=True)]


_ReadGrowth = Callable[[LedgerGrowth, float], float]


def _per_s(count: int, interval_s: float) -> float:
    return count / interval_s if interval_s > 0 else 0.0


#: Managed-ledger gauges from the interval's growth (and its length in seconds).
LEDGER_INTERVAL_GAUGES: dict[str, tuple[str, _ReadGrowth]] = {
    "pulsar_ml_AddEntrySucceed": ("Adds that succeeded during the last sampling interval",
                                  lambda g, s: g.counts.adds_succeeded),
    "pulsar_ml_AddEntryErrors": ("Adds that failed during the last sampling interval",
                                 lambda g, s: g.counts.add_errors),
    "pulsar_ml_ReadEntriesSucceeded": ("Entries read during the last sampling interval",
                                       lambda g, s: g.counts.entries_read),
    "pulsar_ml_ReadEntriesErrors": ("Reads that failed during the last sampling interval",
                                    lambda g, s: g.counts.read_errors),
    "pulsar_ml_AddEntryWithReplicasBytesRate": (
        "Bytes added per second, counting every copy (size x write quorum)",
        lambda g, s: _per_s(g.replicated_add_bytes, s)),
    "pulsar_ml_ReadEntriesOpsCacheMissesRate": (
        "Entries per second read from the bookies because the cache lacked them",
        lambda g, s: _per_s(g.counts.cache_missed_entries, s)),
    "pulsar_ml_MarkDeleteRate": ("Mark-delete moves of durable cursors per second",
                                 lambda g, s: _per_s(g.counts.mark_deletes, s)),
}
_ReadBuckets = Callable[[stats.Counts], Sequence[int]]
#: Bucket series: description, bounds, and the counts they are taken from.
LEDGER_BUCKETS: dict[str, tuple[str, Sequence[float], _ReadBuckets]] = {
    "pulsar_ml_AddEntryLatencyBuckets": (
        "Adds per second by latency (ms) from add_entry to durable, queueing included",
        stats.LATENCY_BOUNDS_MS, lambda c: c.add_latency_counts),
    "pulsar_ml_LedgerAddEntryLatencyBuckets": (
        "Adds per second by latency (ms) from their hand-over to the ledger to durable",
        stats.LATENCY_BOUNDS_MS, lambda c: c.ledger_add_latency_counts),
    "pulsar_ml_LedgerSwitchLatencyBuckets": (
        "Ledger switches per second by latency (ms)", stats.LATENCY_BOUNDS_MS,
        lambda c: c.ledger_switch_counts),
    "pulsar_ml_EntrySizeBuckets": ("Adds per second by entry size (bytes)",
                                   stats.ENTRY_SIZE_BOUNDS, lambda c: c.entry_size_counts),
}


def ledger_families(samples: Sequence[tuple[str, str, LedgerGrowth]], interval_s: float
                    ) -> Iterator[prometheus_client.metrics_core.Metric]:
    """The interval series for (cluster, namespace, growth) sums per namespace."""
    gauge = prometheus_client.metrics_core.GaugeMetricFamily
    for name, (description, read) in LEDGER_INTERVAL_GAUGES.items():
        family = gauge(name, description, labels=["cluster", "namespace"])
        for cluster, namespace, growth in samples:
            family.add_metric([cluster, namespace], read(growth, interval_s))
        yield family
    for name, (description, bounds, read_buckets) in LEDGER_BUCKETS.items():
        buckets = gauge(name, description, labels=["cluster", "namespace", "quantile"])
        overflow = gauge(f"{name}_OVERFLOW", f"{description}: beyond the last bound",
                         labels=["cluster", "namespace"])
        for cluster, namespace, growth in samples:
            counts = read_buckets(growth.counts)
            for quantile, count in zip(quantile_labels(bounds), counts, strict=False):
                buckets.add_metric([cluster, namespace, quantile], _per_s(count, interval_s))
            overflow.add_metric([cluster, namespace], _per_s(counts[-1], interval_s))
        yield buckets
        yield overflow


_ReadCache = Callable[[stats.CacheCounts, stats.CacheCounts, float], float]
#: Entry cache gauges from (the cache now, its growth in the interval, interval seconds).
CACHE_GAUGES: dict[str, tuple[str, _ReadCache]] = {
    "pulsar_ml_cache_evictions": ("Times entries were evicted during the last interval",
                                  lambda now, g, s: g.evictions),
    "pulsar_ml_cache_hits_rate": ("Cache hits per second", lambda now, g, s: _per_s(g.hits, s)),
    "pulsar_ml_cache_hits_throughput": ("Bytes per second read from the cache",
                                        lambda now, g, s: _per_s(g.hit_bytes, s)),
    "pulsar_ml_cache_misses_rate": ("Cache misses per second",
                                    lambda now, g, s: _per_s(g.misses, s)),
    "pulsar_ml_cache_misses_throughput": ("Bytes per second read past the cache",
                                          lambda now, g, s: _per_s(g.miss_bytes, s)),
    "pulsar_ml_cache_used_size": ("Bytes of entries in the cache", lambda now, g, s: now.used_bytes),
    "pulsar_ml_cache_entries": ("Entries in the cache", lambda now, g, s: now.entries),
    "pulsar_ml_cache_inserted_entries_total": ("Entries inserted into the cache",
                                               lambda now, g, s: now.inserted_entries),
    "pulsar_ml_cache_evicted_entries_total": ("Entries evicted from the cache",
                                              lambda now, g, s: now.evicted_entries),
}


def cache_families(cluster: str, now: stats.CacheCounts, sampler: LedgerSampler
                   ) -> Iterator[prometheus_client.metrics_core.Metric]:
    for name, (description, read) in CACHE_GAUGES.items():
        family = prometheus_client.metrics_core.GaugeMetricFamily(
            name, description, labels=["cluster"])
        family.add_metric([cluster], read(now, sampler.cache_growth, sampler.interval_s))
        yield family
