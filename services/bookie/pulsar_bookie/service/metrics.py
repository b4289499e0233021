"""The bookie's metrics, produced through OpenTelemetry and served as Prometheus text.

Add and read latencies are histograms fed by the server (one sample per
request). Everything else is read from the engine's and the server's own
counters at scrape time, so the data path pays nothing for it. Each bookie
gets its own MeterProvider and prometheus_client registry, so several
bookies can live in one test process.

Names follow Apache BookKeeper's where one exists, in lower case as the
OpenTelemetry exporter writes them (bookkeeper_server_add_entry_request_seconds,
bookie_journal_sync_total, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import prometheus_client
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource

#: Request latency buckets in seconds (0.1 ms .. 10 s).
LATENCY_BUCKETS_S = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5, 10.0,
)
_SUCCESS = {"success": "true"}
_FAILURE = {"success": "false"}

#: name -> value read at scrape time
Readings = Callable[[], dict[str, float]]


class BookieMetrics:
    """Implements net.server.RequestObserver; `render()` is the /metrics body."""

    def __init__(self, readings: Readings) -> None:
        self._readings = readings
        self.registry = prometheus_client.CollectorRegistry(auto_describe=False)
        self._reader = PrometheusMetricReader(
            disable_target_info=True, scope_info_enabled=False, registry=self.registry
        )
        self._provider = MeterProvider(
            metric_readers=[self._reader],
            resource=Resource.create({"service.name": "pulsar-bookie"}),
        )
        meter = self._provider.get_meter("pulsar_bookie")
        self._add_latency = meter.create_histogram(
            "bookkeeper_server_add_entry_request", unit="s",
            description="Time from receiving an add to its journal sync",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS_S,
        )
        self._read_latency = meter.create_histogram(
            "bookkeeper_server_read_entry_request", unit="s",
            description="Time to serve a read, LAC read or fence",
            explicit_bucket_boundaries_advisory=LATENCY_BUCKETS_S,
        )
        self._snapshot: dict[str, float] = {}
        for name, description in _COUNTERS.items():
            meter.create_observable_counter(name, [self._reading(name)], description=description)
        for name, description in _GAUGES.items():
            meter.create_observable_gauge(name, [self._reading(name)], description=description)

    def _reading(self, name: str) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            value = self._snapshot.get(name)
            return [] if value is None else [Observation(value)]

        return observe

    def on_add(self, seconds: float, ok: bool) -> None:
        self._add_latency.record(seconds, _SUCCESS if ok else _FAILURE)

    def on_read(self, seconds: float, ok: bool) -> None:
        self._read_latency.record(seconds, _SUCCESS if ok else _FAILURE)

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
    "bookie_journal_batches": "Journal batches written",
    "bookie_journal_bytes": "Bytes written to the journals",
    "bookie_read_cache_hits": "Reads served by the read-ahead cache",
    "bookie_read_cache_misses": "Reads that went to an entry log",
    "bookie_flush": "Write cache flushes (checkpoints)",
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
}
