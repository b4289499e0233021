"""The bookie's metrics, served as Prometheus text: gauges and counters through OpenTelemetry.

Counters and gauges are OpenTelemetry observable instruments read from the
engine's and the server's own counters at scrape time, so the data path pays
nothing for them. Add and read latencies need one sample per request; they
are counted in LatencyHistogram (see there why not the OpenTelemetry
Histogram) and exported into the same registry. Each bookie
gets its own MeterProvider and prometheus_client registry, so several
bookies can live in one test process.

The OpenTelemetry exporter writes names in lower case
(bookkeeper_server_add_entry_request_seconds, bookie_journal_sync_total,
...), so BookKeeper's own series, whose names mix cases, are written beside
them by _BookKeeperCollector with BookKeeper's exact names and labels
(bookie_SERVER_STATUS, bookkeeper_server_ADD_ENTRY_count{success},
bookkeeper_server_ADD_ENTRY_REQUEST{success,quantile} in milliseconds,
bookie_journal_JOURNAL_SYNC_count, bookie_journal_JOURNAL_QUEUE_SIZE,
bookie_WRITE_BYTES), so dashboards and alerts written for BookKeeper find
them. Quantiles are estimated from the latency buckets (the bucket's upper
bound), where BookKeeper keeps a sliding-window summary.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence

import prometheus_client
import prometheus_client.metrics_core
import prometheus_client.registry
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from pulsar_common import process_metrics

#: Request latency buckets in seconds (0.1 ms .. 10 s).
LATENCY_BUCKETS_S = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 10.0,
)

#: name -> value read at scrape time
Readings = Callable[[], dict[str, float]]


class LatencyHistogram:
    """Fixed-bucket latency counts, updated in about a microsecond per sample.

    The OpenTelemetry SDK's Histogram.record costs tens of microseconds per
    call (measured in bench/bookie_transport.py's notes in docs/bookie.md),
    as much as the rest of an add, so request latencies are counted here and
    handed to the Prometheus registry as a histogram family at scrape time.
    """

    def __init__(self, bounds: Sequence[float] = LATENCY_BUCKETS_S) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.total += seconds

    def cumulative(self) -> list[tuple[str, float]]:
        buckets, running = [], 0
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts):
            running += count
            buckets.append((bound, float(running)))
        return buckets


class _LatencyCollector(prometheus_client.registry.Collector):
    def __init__(self, families: dict[str, tuple[str, dict[str, LatencyHistogram]]]) -> None:
        self._families = families

    def collect(self) -> Iterable[prometheus_client.metrics_core.Metric]:
        for name, (description, by_outcome) in self._families.items():
            family = prometheus_client.metrics_core.HistogramMetricFamily(
                name, description, labels=["success"], unit="seconds"
            )
            for outcome, histogram in by_outcome.items():
                family.add_metric([outcome], histogram.cumulative(), histogram.total)
            yield family


#: Quantiles of BookKeeper's request summaries.
SUMMARY_QUANTILES = (0.5, 0.75, 0.95, 0.99, 0.999, 0.9999, 1.0)


def quantile_ms(histogram: LatencyHistogram, quantile: float) -> float:
    """The upper bound (ms) of the bucket holding the quantile; the last bound past it."""
    total = sum(histogram.counts)
    if total == 0:
        return 0.0
    rank, running = quantile * total, 0
    for index, count in enumerate(histogram.counts):
        running += count
        if running >= rank and count:
            bound = histogram.bounds[min(index, len(histogram.bounds) - 1)]
            return bound * 1000.0
    return histogram.bounds[-1] * 1000.0


class _BookKeeperCollector(prometheus_client.registry.Collector):
    """BookKeeper's server and journal series under their exact, mixed-case names."""

    def __init__(self, metrics: BookieMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[prometheus_client.metrics_core.Metric]:
        snapshot = self._metrics.snapshot
        core = prometheus_client.metrics_core
        for name, reading in (("bookie_SERVER_STATUS", "bookie_server_status"),
                              ("bookie_journal_JOURNAL_QUEUE_SIZE", "bookie_journal_queue_size")):
            if reading in snapshot:
                yield core.GaugeMetricFamily(name, f"BookKeeper's {name}", snapshot[reading])
        for name, reading in (("bookie_WRITE_BYTES", "bookie_journal_bytes"),):
            if reading in snapshot:
                yield core.UnknownMetricFamily(name, f"BookKeeper's {name}", snapshot[reading])
        if "bookie_journal_sync" in snapshot:
            sync = core.UnknownMetricFamily("bookie_journal_JOURNAL_SYNC_count",
                                            "Journal fsyncs", labels=["success"])
            sync.add_metric(["true"], snapshot["bookie_journal_sync"])
            yield sync
        for op, by_outcome in (("ADD_ENTRY", self._metrics.adds),
                               ("READ_ENTRY", self._metrics.reads)):
            count = core.UnknownMetricFamily(f"bookkeeper_server_{op}_count",
                                             f"{op} requests", labels=["success"])
            summary = core.SummaryMetricFamily(f"bookkeeper_server_{op}_REQUEST",
                                               f"{op} request latency (ms)", labels=["success"])
            quantiles = core.GaugeMetricFamily(f"bookkeeper_server_{op}_REQUEST",
                                               f"{op} request latency (ms)",
                                               labels=["success", "quantile"])
            for outcome, histogram in by_outcome.items():
                requests = sum(histogram.counts)
                count.add_metric([outcome], requests)
                summary.add_metric([outcome], requests, histogram.total * 1000.0)
                for q in SUMMARY_QUANTILES:
                    quantiles.add_metric([outcome, str(q)], quantile_ms(histogram, q))
            yield count
            yield _with_quantiles(summary, quantiles)


def _with_quantiles(summary: prometheus_client.metrics_core.Metric,
                    quantiles: prometheus_client.metrics_core.Metric
                    ) -> prometheus_client.metrics_core.Metric:
    """One summary family: the quantile samples, then _count and _sum."""
    summary.samples = [*quantiles.samples, *summary.samples]
    return summary


class BookieMetrics:
    """Implements net.server.RequestObserver; `render()` is the /metrics body."""

    def __init__(self, readings: Readings) -> None:
        self._readings = readings
        self.registry = prometheus_client.CollectorRegistry(auto_describe=False)
        process_metrics.register(self.registry)
        self._reader = PrometheusMetricReader(
            disable_target_info=True, scope_info_enabled=False, registry=self.registry
        )
        self._provider = MeterProvider(
            metric_readers=[self._reader],
            resource=Resource.create({"service.name": "pulsar-bookie"}),
        )
        meter = self._provider.get_meter("pulsar_bookie")
        self._adds = {"true": LatencyHistogram(), "false": LatencyHistogram()}
        self._reads = {"true": LatencyHistogram(), "false": LatencyHistogram()}
        self.registry.register(_LatencyCollector({
            "bookkeeper_server_add_entry_request": (
                "Time from receiving an add to its journal sync", self._adds),
            "bookkeeper_server_read_entry_request": (
                "Time to serve a read, LAC read or fence", self._reads),
        }))
        self._snapshot: dict[str, float] = {}
        self.registry.register(_BookKeeperCollector(self))
        for name, description in _COUNTERS.items():
            meter.create_observable_counter(name, [self._reading(name)], description=description)
        for name, description in _GAUGES.items():
            meter.create_observable_gauge(name, [self._reading(name)], description=description)

    def _reading(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            value = self._snapshot.get(name)
            return [] if value is None else [Observation(value)]

        return observe

    @property
    def snapshot(self) -> dict[str, float]:
        """The readings of the scrape in progress (empty between scrapes)."""
        return self._snapshot

    @property
    def adds(self) -> dict[str, LatencyHistogram]:
        return self._adds

    @property
    def reads(self) -> dict[str, LatencyHistogram]:
        return self._reads

    def on_add(self, seconds: float, ok: bool) -> None:
        self._adds["true" if ok else "false"].observe(seconds)

    def on_read(self, seconds: float, ok: bool) -> None:
        self._reads["true" if ok else "false"].observe(seconds)

    def render(self) -> bytes:
        self._snapshot = self._readings()
        try:
            return prometheus_client.generate_latest(self.registry)
        finally:
            self._snapshot = {}

    def shutdown(self) -> None:
        self._provider.shutdown()


_COUNTERS = {
    "bookie_add_entry": "Entries added to this bookie's storage",
    "bookie_journal_sync": "fdatasync calls of the journals (group commits)",
    "bookie_journal_sync_seconds": "Seconds spent in journal fdatasync (/ bookie_journal_sync: "
                                   "mean sync latency)",
    "bookie_journal_batches": "Journal batches written",
    "bookie_journal_bytes": "Bytes written to the journals",
    "bookie_read_cache_hits": "Reads served by the read-ahead cache",
    "bookie_read_cache_misses": "Reads that went to an entry log",
    "bookie_flush": "Write cache flushes (checkpoints)",
    "bookie_autorecovery_ledgers_replicated":
        "Under-replicated ledgers this bookie's replication worker fully replicated again",
    "bookie_autorecovery_fragments_replicated": "Fragment copies moved to a new bookie",
    "bookie_autorecovery_bytes_copied": "Entry bytes copied by the replication worker",
    "bookie_autorecovery_failures": "Re-replication attempts that failed (retried later)",
}
_GAUGES = {
    "bookie_journal_queue_size": "Records waiting for the journal",
    "bookie_write_cache_size": "Bytes in the write cache",
    "bookie_read_cache_size": "Bytes in the read cache",
    "bookie_add_entry_in_progress": "Adds being processed",
    "bookie_read_entry_in_progress": "Reads, LAC reads and fences being processed",
    "bookie_long_poll_lac_waiting": "Long-poll LAC requests waiting",
    "bookie_server_status": "1 when writable, 0 when read-only",
    "bookie_ledger_disk_usage": "Fraction of the fullest ledger disk in use",
    "bookie_autorecovery_auditor": "1 while this bookie is the cluster's elected auditor",
}
