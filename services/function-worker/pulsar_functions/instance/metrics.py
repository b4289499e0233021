"""What an instance counts, and the HTTP port that shows it.

`GET /metrics` is Prometheus text (Apache's `pulsar_function_*` names, labelled
by tenant/namespace/name/instance_id/fqfn, plus `pulsar_function_user_metric_*`
for context.record_metric), `GET /stats` the same numbers as Apache's
FunctionInstanceStats JSON (what the worker's status and stats endpoints
collect), `GET /healthz` 200 while the instance runs (from the moment its consumers are subscribed).
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections import deque
from typing import Any

import prometheus_client
from prometheus_client import registry as prometheus_registry

from pulsar_functions import config

#: Latest exceptions kept for /stats (Apache keeps a handful too).
LATEST_EXCEPTIONS_MAX = 10
LABELS = ("tenant", "namespace", "name", "instance_id", "cluster", "fqfn")


class InstanceStats:
    """Counters of one instance; updated by the processing thread, read by the HTTP thread."""

    def __init__(self, function: config.FunctionConfig, instance_id: int,
                 cluster: str = "standalone") -> None:
        self.registry = prometheus_client.CollectorRegistry()
        self._labels = (function.tenant, function.namespace, function.name, str(instance_id),
                        cluster, function.fqfn)
        self._lock = threading.Lock()
        self.received = 0
        self.processed = 0
        self.user_exceptions = 0
        self.system_exceptions = 0
        self.latency_total_ms = 0.0
        self.last_invocation_ms = 0
        self.latest_user_exceptions: deque[dict[str, Any]] = deque(maxlen=LATEST_EXCEPTIONS_MAX)
        self.latest_system_exceptions: deque[dict[str, Any]] = deque(
            maxlen=LATEST_EXCEPTIONS_MAX)
        self.user_metrics: dict[str, float] = {}
        #: Set once the consumers are subscribed; /healthz says 200 only then.
        self.running = False
        self.registry.register(_Collector(self))

    def label_values(self) -> tuple[str, ...]:
        return self._labels

    def on_received(self) -> None:
        with self._lock:
            self.received += 1
            self.last_invocation_ms = int(time.time() * 1000)

    def on_processed(self, latency_ms: float) -> None:
        with self._lock:
            self.processed += 1
            self.latency_total_ms += latency_ms

    def on_user_exception(self, exc: BaseException) -> None:
        with self._lock:
            self.user_exceptions += 1
            self.latest_user_exceptions.append(_exception(exc))

    def on_system_exception(self, exc: BaseException) -> None:
        with self._lock:
            self.system_exceptions += 1
            self.latest_system_exceptions.append(_exception(exc))

    def record_metric(self, name: str, value: float) -> None:
        with self._lock:
            self.user_metrics[name] = float(value)

    def stats_json(self) -> dict[str, Any]:
        """Apache's FunctionInstanceStatusData fields."""
        with self._lock:
            return {
                "running": self.running,
                "numReceived": self.received,
                "numSuccessfullyProcessed": self.processed,
                "numUserExceptions": self.user_exceptions,
                "latestUserExceptions": list(self.latest_user_exceptions),
                "numSystemExceptions": self.system_exceptions,
                "latestSystemExceptions": list(self.latest_system_exceptions),
                "averageLatency": self.latency_total_ms / self.processed if self.processed else 0,
                "lastInvocationTime": self.last_invocation_ms,
                "userMetrics": dict(self.user_metrics),
            }


def _exception(exc: BaseException) -> dict[str, Any]:
    return {"exceptionString": f"{type(exc).__name__}: {exc}",
            "timestampMs": int(time.time() * 1000)}


class _Collector(prometheus_registry.Collector):
    def __init__(self, stats: InstanceStats) -> None:
        self._stats = stats

    def collect(self) -> Any:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        stats = self._stats.stats_json()
        labels = list(LABELS)
        values = list(self._stats.label_values())
        for name, key, doc in (
            ("pulsar_function_received", "numReceived", "messages received"),
            ("pulsar_function_processed_successfully", "numSuccessfullyProcessed",
             "messages processed without an exception"),
            ("pulsar_function_user_exceptions", "numUserExceptions", "exceptions of the function"),
            ("pulsar_function_system_exceptions", "numSystemExceptions",
             "exceptions of the runtime"),
        ):
            family = CounterMetricFamily(name, doc, labels=labels)
            family.add_metric(values, stats[key])
            yield family
        for name, key, doc in (
            ("pulsar_function_process_latency_ms", "averageLatency", "mean process latency"),
            ("pulsar_function_last_invocation", "lastInvocationTime", "epoch ms of the last input"),
        ):
            gauge = GaugeMetricFamily(name, doc, labels=labels)
            gauge.add_metric(values, stats[key])
            yield gauge
        for metric, value in stats["userMetrics"].items():
            gauge = GaugeMetricFamily(f"pulsar_function_user_metric_{_metric_name(metric)}",
                                      f"context.record_metric({metric!r})", labels=labels)
            gauge.add_metric(values, value)
            yield gauge


def _metric_name(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


class MetricsServer:
    """The instance's HTTP port: /metrics, /stats, /healthz."""

    def __init__(self, stats: InstanceStats, host: str, port: int) -> None:
        self._stats = stats
        handler = _handler(stats)
        self._server = http.server.ThreadingHTTPServer((host, port), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="metrics",
                                        daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(stats: InstanceStats) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/metrics":
                self._reply(200, prometheus_client.generate_latest(stats.registry),
                            prometheus_client.CONTENT_TYPE_LATEST)
            elif self.path == "/stats":
                self._reply(200, json.dumps(stats.stats_json()).encode(), "application/json")
            elif self.path == "/healthz":
                ok = stats.running
                self._reply(200 if ok else 503, b"ok\n" if ok else b"stopping\n", "text/plain")
            else:
                self._reply(404, b"not found\n", "text/plain")

        def _reply(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
