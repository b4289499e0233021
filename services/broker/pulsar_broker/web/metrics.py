"""`GET /metrics`: the broker's metrics in Prometheus text format, produced through OpenTelemetry.

Each application gets its own MeterProvider whose PrometheusMetricReader
writes into a private prometheus_client registry (several brokers may live
in one test process). Per-topic numbers are observable instruments read from
the topics' own counters at scrape time, so publishing and dispatching cost
nothing extra. The one exception is the add-entry latency histogram, which
needs a sample per write: the publish path calls
`pulsar_broker.web.hooks.record_add_entry_latency(topic, seconds)`.

Names and labels follow Apache's broker metrics: `pulsar_in_messages_total`,
`pulsar_out_bytes_total`, `pulsar_msg_backlog`, `pulsar_storage_size`, ...
with `cluster`, `namespace` and `topic` labels.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import prometheus_client
from aiohttp import web
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource

from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_broker.web import counters, hooks, rates

#: Topics whose label sets are cached for the latency histogram; the cache restarts past this.
LATENCY_LABEL_CACHE_MAX = 100_000
#: Add-entry latency buckets in seconds (Apache's 0.5 ms ... 1 s steps).
ADD_ENTRY_LATENCY_BUCKETS_S = (0.0005, 0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 1.0)

#: The classic text exposition format every Prometheus version scrapes (what Apache serves).
TEXT_FORMAT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

METRICS_KEY = web.AppKey("broker_metrics", object)


@dataclass
class TopicSample:
    """One topic's numbers at scrape time."""

    labels: dict[str, str]
    in_messages: int
    in_bytes: int
    out_messages: int
    out_bytes: int
    backlog: int
    storage_size: int
    subscriptions: int
    producers: int
    consumers: int
    rates: rates.Rates = field(default_factory=rates.Rates)
    subscription_backlogs: dict[str, int] = field(default_factory=dict)


class BrokerMetrics:
    def __init__(self, service: BrokerService, tracker: rates.RateTracker) -> None:
        self.service = service
        self.tracker = tracker
        self.registry = prometheus_client.CollectorRegistry(auto_describe=False)
        self._reader = PrometheusMetricReader(
            disable_target_info=True, scope_info_enabled=False, registry=self.registry)
        self._provider = MeterProvider(
            metric_readers=[self._reader],
            resource=Resource.create({"service.name": "pulsar-broker"}))
        self._samples: list[TopicSample] = []
        self._out = counters.OutCounters()
        self._latency_labels: dict[str, dict[str, str]] = {}
        meter = self._provider.get_meter("pulsar_broker")
        self._add_entry_latency = meter.create_histogram(
            "pulsar_storage_write_latency", unit="s",
            description="Time to add an entry to the managed ledger",
            explicit_bucket_boundaries_advisory=ADD_ENTRY_LATENCY_BUCKETS_S)
        self._observe_topics(meter)

    def _observe_topics(self, meter: Any) -> None:
        totals: dict[str, tuple[str, Callable[[TopicSample], float]]] = {
            "pulsar_in_messages": ("Messages published to the topic", lambda s: s.in_messages),
            "pulsar_in_bytes": ("Bytes published to the topic", lambda s: s.in_bytes),
            "pulsar_out_messages": ("Messages dispatched to consumers", lambda s: s.out_messages),
            "pulsar_out_bytes": ("Bytes dispatched to consumers", lambda s: s.out_bytes),
        }
        gauges: dict[str, tuple[str, Callable[[TopicSample], float]]] = {
            "pulsar_msg_backlog": ("Entries not yet acknowledged, over subscriptions",
                                   lambda s: s.backlog),
            "pulsar_storage_size": ("Bytes stored for the topic", lambda s: s.storage_size),
            "pulsar_subscriptions_count": ("Subscriptions", lambda s: s.subscriptions),
            "pulsar_producers_count": ("Connected producers", lambda s: s.producers),
            "pulsar_consumers_count": ("Connected consumers", lambda s: s.consumers),
        }
        rate_gauges: dict[str, tuple[str, Callable[[TopicSample], float]]] = {
            "pulsar_rate_in": ("Messages published per second", lambda s: s.rates.msg_rate_in),
            "pulsar_rate_out": ("Messages dispatched per second", lambda s: s.rates.msg_rate_out),
            "pulsar_throughput_in": ("Bytes published per second",
                                     lambda s: s.rates.msg_throughput_in),
            "pulsar_throughput_out": ("Bytes dispatched per second",
                                      lambda s: s.rates.msg_throughput_out),
        }
        for name, (description, read) in totals.items():
            meter.create_observable_counter(name, [self._callback(read)], description=description)
        for name, (description, read) in {**gauges, **rate_gauges}.items():
            meter.create_observable_gauge(name, [self._callback(read)], description=description)
        meter.create_observable_gauge(
            "pulsar_subscription_back_log", [self._subscription_backlogs],
            description="Entries not yet acknowledged by the subscription")

    def _callback(self, read: Callable[[TopicSample], float]
                  ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(read(sample), sample.labels) for sample in self._samples]
        return observe

    def _subscription_backlogs(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(backlog, {**sample.labels, "subscription": name})
                for sample in self._samples
                for name, backlog in sample.subscription_backlogs.items()]

    def _labels(self, topic: str, namespace: str) -> dict[str, str]:
        return {"cluster": self.service.config.cluster_name, "namespace": namespace,
                "topic": topic}

    def observe_add_entry(self, topic: str, seconds: float) -> None:
        labels = self._latency_labels.get(topic)
        if labels is None:
            if len(self._latency_labels) >= LATENCY_LABEL_CACHE_MAX:
                self._latency_labels.clear()
            namespace = topic.split("://", 1)[-1].rsplit("/", 1)[0]
            labels = self._latency_labels[topic] = self._labels(topic, namespace)
        self._add_entry_latency.record(seconds, labels)

    def _sample(self, topic: PersistentTopic) -> TopicSample:
        subscriptions = list(topic.subscriptions.values())
        backlogs = {s.name: s.cursor.number_of_entries_in_backlog for s in subscriptions}
        everyone = [c for s in subscriptions for c in s.consumers]
        out_messages, out_bytes = self._out.totals(str(topic.name), everyone)
        return TopicSample(
            labels=self._labels(str(topic.name), str(topic.name.namespace_name)),
            in_messages=topic.msg_in, in_bytes=topic.bytes_in,
            out_messages=out_messages, out_bytes=out_bytes,
            backlog=sum(backlogs.values()), storage_size=topic.ledger.total_size,
            subscriptions=len(subscriptions), producers=len(topic.producers),
            consumers=sum(len(s.consumers) for s in subscriptions),
            rates=self.tracker.topic_rates(str(topic.name)),
            subscription_backlogs=backlogs)

    def render(self) -> bytes:
        topics = self.service.loaded_topics
        self._samples = [self._sample(topic) for topic in topics]
        self._out.end_pass()
        try:
            return prometheus_client.generate_latest(self.registry)
        finally:
            self._samples = []

    def shutdown(self) -> None:
        hooks.remove_add_entry_recorder(self.observe_add_entry)
        self._provider.shutdown()


def install(app: web.Application, service: BrokerService) -> None:
    """Give app its own metrics and the `/metrics` route (after rates.install)."""
    metrics = BrokerMetrics(service, app[rates.TRACKER_KEY])
    hooks.add_add_entry_recorder(metrics.observe_add_entry)
    app[METRICS_KEY] = metrics

    async def scrape(request: web.Request) -> web.Response:
        body = metrics.render()
        return web.Response(body=body, headers={"Content-Type": TEXT_FORMAT_CONTENT_TYPE})

    async def stop(app: web.Application) -> None:
        metrics.shutdown()

    app.router.add_get("/metrics", scrape)
    app.router.add_get("/metrics/", scrape)
    app.on_cleanup.append(stop)
