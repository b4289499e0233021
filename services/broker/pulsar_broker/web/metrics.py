"""`GET /metrics`: the broker's metrics in Prometheus text format, with Apache's names.

Each application gets its own MeterProvider whose PrometheusMetricReader
writes into a private prometheus_client registry (several brokers may live
in one test process). Per-topic numbers are observable instruments read from
the topics' own counters at scrape time, so publishing and dispatching cost
nothing extra. The one exception is the add-entry statistics (write latency
and entry size buckets), which need a sample per write: a BrokerMetrics is
a `topics.telemetry.TopicTelemetry` recorder added to the broker service's
recorders, which every topic calls once per entry added; a call costs a
bisect and a few additions (entry_stats.py).

Names and labels follow Apache's broker metrics (`pulsar_in_messages_total`,
`pulsar_msg_backlog`, `pulsar_storage_backlog_size`,
`pulsar_subscription_unacked_messages`, `pulsar_storage_write_latency_le_*`,
`pulsar_entry_size_le_*`, ...) with `cluster`, `namespace` and `topic`
labels. With `exposeTopicLevelMetricsInPrometheus=false` the same series are
summed per namespace (labels `cluster`, `namespace`) and the subscription
series are left out, as Apache does. `pulsar_topics_count` is always per
namespace. `pulsar_storage_write_rate` and `pulsar_storage_read_rate` are
entries per second, from the rate tracker's samples (rates.py) of what
topics add and dispatchers read. The managed-ledger series
(`pulsar_ml_AddEntryMessagesRate`, `_AddEntryBytesRate`, `_ReadEntriesRate`,
`_ReadEntriesBytesRate`, `_NumberOfMessagesInBacklog`,
`_StoredMessagesSize`) are always per namespace, labelled as Apache does
with the ledgers' prefix `<tenant>/<namespace>/persistent`, and served by a
collector of their own because OpenTelemetry lower-cases instrument names.
The same collector serves the other managed-ledger series and the entry
cache's (`pulsar_ml_AddEntrySucceed`, `_AddEntryLatencyBuckets`, ...,
`pulsar_ml_cache_hits_rate`, ...: ml_metrics.py), from the managed ledgers'
own counters taken every sampling interval.
The broker's connection series (`pulsar_active_connections`,
`pulsar_connection_created_total_count`, ...) are gauges labelled `cluster`,
`broker` (the advertised address) and `metric="broker_connection"`, as
Apache's are, read from the connections of every binary-protocol listener
(service/connections.py); `pulsar_broker_throttled_connections` (label
`cluster`) counts the connections whose reading is paused now, for
maxPendingPublishRequestsPerConnection or a publish rate. The process's own `process_*` and `python_*` series come from
pulsar_common.process_metrics (Apache's JVM exposes `jvm_*` instead).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import prometheus_client
import prometheus_client.metrics_core
import prometheus_client.registry
from aiohttp import web
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.resources import Resource
from pulsar_common import process_metrics

from pulsar_broker.service import connections
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics import out_counters, policies
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_broker.web import entry_stats, ml_metrics, rates

log = logging.getLogger(__name__)

#: Topics whose add-entry statistics are kept; statistics of unloaded topics are dropped at
#: every scrape, and all of them past this many topics.
ENTRY_STATS_TOPICS_MAX = 100_000
#: Distinct quorum settings whose write quorum is remembered (namespaces rarely differ).
WRITE_QUORUMS_MAX = 256

#: The classic text exposition format every Prometheus version scrapes (what Apache serves).
TEXT_FORMAT_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

METRICS_KEY = web.AppKey("broker_metrics", object)


@dataclass
class SubscriptionSample:
    """One subscription's numbers at scrape time (topic-level metrics only)."""

    name: str
    backlog: int
    delayed: int
    unacked_messages: int
    blocked_on_unacked_messages: bool
    rates: rates.Rates = field(default_factory=rates.Rates)


@dataclass
class TopicSample:
    """One topic's numbers at scrape time, or a namespace's sums of them."""

    labels: dict[str, str]
    in_messages: int
    in_bytes: int
    out_messages: int
    out_bytes: int
    backlog: int
    backlog_size: int
    storage_size: int
    subscriptions: int
    producers: int
    consumers: int
    delayed: int
    #: storage_size times the write quorum: the bytes the bookies hold for the topic.
    stored_size_with_replicas: int = 0
    rates: rates.Rates = field(default_factory=rates.Rates)
    entries: entry_stats.EntryStats = field(default_factory=entry_stats.EntryStats)
    subscription_samples: list[SubscriptionSample] = field(default_factory=list)
    #: entries.series() as a dict, filled once per scrape.
    entry_series: dict[str, float] = field(default_factory=dict)
    #: What the topic's managed ledger counted during the last sampling interval.
    ledger_growth: ml_metrics.LedgerGrowth = field(default_factory=ml_metrics.LedgerGrowth)

    def add(self, other: TopicSample) -> None:
        """Fold other (a topic of the same namespace) into these sums."""
        for name in ("in_messages", "in_bytes", "out_messages", "out_bytes", "backlog",
                     "backlog_size", "storage_size", "subscriptions", "producers", "consumers",
                     "delayed", "stored_size_with_replicas"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.rates = self.rates + other.rates
        self.entries.add(other.entries)
        self.ledger_growth = self.ledger_growth.plus(other.ledger_growth)


_Read = Callable[[TopicSample], float]
_ReadSubscription = Callable[[SubscriptionSample], float]

#: Counters per topic (exposed with the _total suffix).
TOPIC_COUNTERS: dict[str, tuple[str, _Read]] = {
    "pulsar_in_messages": ("Messages published to the topic", lambda s: s.in_messages),
    "pulsar_in_bytes": ("Bytes published to the topic", lambda s: s.in_bytes),
    "pulsar_out_messages": ("Messages dispatched to consumers", lambda s: s.out_messages),
    "pulsar_out_bytes": ("Bytes dispatched to consumers", lambda s: s.out_bytes),
}
#: Gauges per topic (or per namespace).
TOPIC_GAUGES: dict[str, tuple[str, _Read]] = {
    "pulsar_msg_backlog": ("Entries not yet acknowledged, over subscriptions",
                           lambda s: s.backlog),
    "pulsar_storage_backlog_size": (
        "Estimated bytes the slowest subscription has not acknowledged", lambda s: s.backlog_size),
    "pulsar_storage_size": ("Bytes stored for the topic", lambda s: s.storage_size),
    "pulsar_storage_offloaded_size": ("Bytes offloaded to tiered storage (none here)",
                                      lambda s: 0),
    "pulsar_subscriptions_count": ("Subscriptions", lambda s: s.subscriptions),
    "pulsar_producers_count": ("Connected producers", lambda s: s.producers),
    "pulsar_consumers_count": ("Connected consumers", lambda s: s.consumers),
    "pulsar_subscription_delayed": ("Messages held for delayed delivery", lambda s: s.delayed),
    "pulsar_rate_in": ("Messages published per second", lambda s: s.rates.msg_rate_in),
    "pulsar_rate_out": ("Messages dispatched per second", lambda s: s.rates.msg_rate_out),
    "pulsar_throughput_in": ("Bytes published per second", lambda s: s.rates.msg_throughput_in),
    "pulsar_throughput_out": ("Bytes dispatched per second",
                              lambda s: s.rates.msg_throughput_out),
    "pulsar_storage_write_rate": ("Entries (message batches) written to storage per second",
                                  lambda s: s.rates.entry_rate_in),
    "pulsar_storage_read_rate": ("Entries (message batches) read from storage per second",
                                 lambda s: s.rates.entry_rate_read),
}
#: Managed-ledger gauges, always per namespace; Apache's `namespace` label here names the
#: ledgers' prefix, `<tenant>/<namespace>/persistent`.
MANAGED_LEDGER_GAUGES: dict[str, tuple[str, _Read]] = {
    "pulsar_ml_AddEntryMessagesRate": ("Entries added per second",
                                       lambda s: s.rates.entry_rate_in),
    "pulsar_ml_AddEntryBytesRate": ("Bytes of entries added per second",
                                    lambda s: s.rates.msg_throughput_in),
    "pulsar_ml_ReadEntriesRate": ("Entries read per second", lambda s: s.rates.entry_rate_read),
    "pulsar_ml_ReadEntriesBytesRate": ("Bytes of entries read per second",
                                       lambda s: s.rates.throughput_read),
    "pulsar_ml_NumberOfMessagesInBacklog": ("Entries not yet acknowledged, over cursors",
                                            lambda s: s.backlog),
    "pulsar_ml_StoredMessagesSize": ("Bytes stored, counting every copy (size x write quorum)",
                                     lambda s: s.stored_size_with_replicas),
}
_ReadConnections = Callable[[connections.BrokerConnections], float]

#: The broker's connection gauges (Apache's broker operability metrics).
CONNECTION_GAUGES: dict[str, tuple[str, _ReadConnections]] = {
    "pulsar_active_connections": ("The number of active connections", lambda c: c.active),
    "pulsar_connection_created_total_count": ("The total number of connections",
                                              lambda c: c.created),
    "pulsar_connection_create_success_count": ("The number of successfully created connections",
                                               lambda c: c.create_succeeded),
    "pulsar_connection_create_fail_count": ("The number of failed connections",
                                            lambda c: c.create_failed),
    "pulsar_connection_closed_total_count": ("The total number of closed connections",
                                             lambda c: c.closed),
}
#: Apache's `metric` label of the connection gauges.
CONNECTION_METRIC_LABEL = "broker_connection"
#: Gauges per subscription (topic-level metrics only).
SUBSCRIPTION_GAUGES: dict[str, tuple[str, _ReadSubscription]] = {
    "pulsar_subscription_back_log": ("Entries not yet acknowledged by the subscription",
                                     lambda s: s.backlog),
    "pulsar_subscription_delayed": ("Messages of the subscription held for delayed delivery",
                                    lambda s: s.delayed),
    "pulsar_subscription_unacked_messages": ("Messages dispatched and not yet acknowledged",
                                             lambda s: s.unacked_messages),
    "pulsar_subscription_blocked_on_unacked_messages": (
        "1 when every consumer waits for acknowledgements (maxUnackedMessagesPerConsumer)",
        lambda s: int(s.blocked_on_unacked_messages)),
    "pulsar_subscription_msg_rate_out": ("Messages dispatched per second",
                                         lambda s: s.rates.msg_rate_out),
    "pulsar_subscription_msg_throughput_out": ("Bytes dispatched per second",
                                               lambda s: s.rates.msg_throughput_out),
}


def _entry_series_reader(series: str) -> _Read:
    return lambda sample: sample.entry_series[series]


class BrokerMetrics:
    def __init__(self, service: BrokerService, tracker: rates.RateTracker) -> None:
        self.service = service
        self.tracker = tracker
        self.topic_level = service.config.expose_topic_level_metrics_in_prometheus
        self.registry = prometheus_client.CollectorRegistry(auto_describe=False)
        process_metrics.register(self.registry)
        self._reader = PrometheusMetricReader(
            disable_target_info=True, scope_info_enabled=False, registry=self.registry)
        self._provider = MeterProvider(
            metric_readers=[self._reader],
            resource=Resource.create({"service.name": "pulsar-broker"}))
        self._samples: list[TopicSample] = []
        self._ledger_samples: list[TopicSample] = []
        self._topics_per_namespace: dict[str, int] = {}
        self._out = out_counters.OutCounters()
        self._entry_stats: dict[str, entry_stats.EntryStats] = {}
        self.ledger_sampler = ml_metrics.LedgerSampler()
        #: Write quorums by (broker's quorums, namespace's quorums): see _write_quorum.
        self._write_quorums: dict[tuple[int | None, ...], int] = {}
        self._observe(self._provider.get_meter("pulsar_broker"))
        # OpenTelemetry lower-cases instrument names; these keep Apache's mixed case.
        self.registry.register(_ManagedLedgerCollector(self))
        self.registry.register(_ConnectionCollector(service))

    def _observe(self, meter: Any) -> None:
        for name, (description, read) in TOPIC_COUNTERS.items():
            meter.create_observable_counter(name, [self._callback(read)], description=description)
        gauges = dict(TOPIC_GAUGES)
        if self.topic_level:
            # The subscription series of the same name carries the per-subscription split.
            gauges.pop("pulsar_subscription_delayed")
            for name, (description, read_sub) in SUBSCRIPTION_GAUGES.items():
                meter.create_observable_gauge(name, [self._subscription_callback(read_sub)],
                                              description=description)
        for name, (description, read) in gauges.items():
            meter.create_observable_gauge(name, [self._callback(read)], description=description)
        for series in entry_stats.series_names():
            meter.create_observable_gauge(
                series, [self._callback(_entry_series_reader(series))],
                description="Entries added, by write latency (ms) or size (bytes) bucket")
        meter.create_observable_gauge(
            "pulsar_topics_count", [self._topics_count],
            description="Topics of the namespace served by this broker")
        meter.create_observable_gauge(
            "pulsar_ml_count", [self._managed_ledgers_count],
            description="Managed ledgers open on this broker")

    def _managed_ledgers_count(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(len(self.service.loaded_topics), self._cluster_labels())]

    def _cluster_labels(self) -> dict[str, str]:
        return {"cluster": self.service.config.cluster_name}

    def _callback(self, read: _Read) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(read(sample), sample.labels) for sample in self._samples]
        return observe

    @property
    def ledger_samples(self) -> list[TopicSample]:
        """The managed-ledger sums per namespace of the scrape in progress."""
        return self._ledger_samples

    def _subscription_callback(self, read: _ReadSubscription
                               ) -> Callable[[CallbackOptions], Iterable[Observation]]:
        def observe(options: CallbackOptions) -> Iterable[Observation]:
            return [Observation(read(sub), {**sample.labels, "subscription": sub.name})
                    for sample in self._samples for sub in sample.subscription_samples]
        return observe

    def _topics_count(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(count, {**self._cluster_labels(), "namespace": namespace})
                for namespace, count in self._topics_per_namespace.items()]

    def record_add_entry(self, topic: str, seconds: float, size_bytes: int) -> None:
        """The broker's topics call this once per entry added (topics.telemetry)."""
        stats = self._entry_stats.get(topic)
        if stats is None:
            if len(self._entry_stats) >= ENTRY_STATS_TOPICS_MAX:
                self._entry_stats.clear()
            stats = self._entry_stats[topic] = entry_stats.EntryStats()
        stats.record(seconds * 1000.0, size_bytes)

    def _sample(self, topic: PersistentTopic) -> TopicSample:
        name = str(topic.name)
        subscriptions = list(topic.subscriptions.values())
        everyone = [c for s in subscriptions for c in s.consumers]
        out_messages, out_bytes = self._out.totals(name, everyone)
        subscription_samples = [self._sample_subscription(name, s) for s in subscriptions]
        return TopicSample(
            labels={**self._cluster_labels(), "namespace": str(topic.name.namespace_name),
                    "topic": name},
            in_messages=topic.msg_in, in_bytes=topic.bytes_in,
            out_messages=out_messages, out_bytes=out_bytes,
            backlog=sum(s.backlog for s in subscription_samples),
            backlog_size=topic.backlog_size(), storage_size=topic.ledger.total_size,
            stored_size_with_replicas=topic.ledger.total_size * self._write_quorum(topic),
            subscriptions=len(subscriptions), producers=len(topic.producers),
            consumers=len(everyone), delayed=sum(s.delayed for s in subscription_samples),
            rates=self.tracker.topic_rates(name),
            entries=self._entry_stats.get(name) or entry_stats.EntryStats(),
            subscription_samples=subscription_samples,
            ledger_growth=self.ledger_sampler.growth(topic.ledger.name))

    def sample_ledgers(self, now_s: float) -> None:
        """Take the managed ledgers' and the entry cache's counters (every sampling interval;
        public so a test can drive it with its own clock)."""
        # A generator: each record is dropped as soon as it is read (see LedgerSampler.tick).
        ledgers = (ml_metrics.LedgerCounters(topic.ledger.name, topic.ledger.stats,
                                             self._write_quorum(topic))
                   for topic in self.service.loaded_topics)
        self.ledger_sampler.tick(ledgers, self.service.ledger_factory.cache_counts(), now_s)

    def _write_quorum(self, topic: PersistentTopic) -> int:
        """The write quorum policies.ledger_config gives the topic's ledger, without building
        a ManagedLedgerConfig per topic per sample: it depends only on the quorums."""
        default = self.service.ledger_factory.default_config
        chosen = topic.policies
        if chosen.ensemble_size is None:
            return default.write_quorum
        key = (default.ensemble_size, default.write_quorum, default.ack_quorum,
               chosen.ensemble_size, chosen.write_quorum, chosen.ack_quorum)
        write_quorum = self._write_quorums.get(key)
        if write_quorum is None:
            if len(self._write_quorums) >= WRITE_QUORUMS_MAX:
                self._write_quorums.clear()
            write_quorum = policies.ledger_config(default, chosen).write_quorum
            self._write_quorums[key] = write_quorum
        return write_quorum

    def _sample_subscription(self, topic: str, subscription: Any) -> SubscriptionSample:
        consumers = list(subscription.consumers)
        return SubscriptionSample(
            name=subscription.name,
            backlog=subscription.cursor.number_of_entries_in_backlog,
            delayed=subscription.dispatcher.delayed_count(),
            unacked_messages=sum(c.unacked_messages for c in consumers),
            blocked_on_unacked_messages=bool(consumers) and all(
                c.blocked_on_unacked for c in consumers),
            rates=self.tracker.subscription_rates(topic, subscription.name))

    def _by_namespace(self, samples: list[TopicSample], suffix: str = "") -> list[TopicSample]:
        """Sums per namespace, labelled with the namespace's name followed by suffix."""
        sums: dict[str, TopicSample] = {}
        for sample in samples:
            namespace = sample.labels["namespace"]
            total = sums.get(namespace)
            if total is None:
                total = sums[namespace] = TopicSample(
                    labels={**self._cluster_labels(), "namespace": namespace + suffix},
                    in_messages=0, in_bytes=0, out_messages=0, out_bytes=0, backlog=0,
                    backlog_size=0, storage_size=0, subscriptions=0, producers=0, consumers=0,
                    delayed=0)
            total.add(sample)
        return list(sums.values())

    def render(self) -> bytes:
        topics = self.service.loaded_topics
        samples = [self._sample(topic) for topic in topics]
        self._out.end_pass()
        loaded = {sample.labels["topic"] for sample in samples}
        for name in [name for name in self._entry_stats if name not in loaded]:
            del self._entry_stats[name]
        self._topics_per_namespace = {}
        for sample in samples:
            namespace = sample.labels["namespace"]
            self._topics_per_namespace[namespace] = self._topics_per_namespace.get(namespace, 0) + 1
        self._samples = samples if self.topic_level else self._by_namespace(samples)
        self._ledger_samples = self._by_namespace(samples, "/persistent")
        for sample in self._samples:
            sample.entry_series = dict(sample.entries.series())
        try:
            return prometheus_client.generate_latest(self.registry)
        finally:
            self._samples = []
            self._ledger_samples = []

    def shutdown(self) -> None:
        self.service.telemetry.remove(self)
        self._provider.shutdown()


class _ManagedLedgerCollector(prometheus_client.registry.Collector):
    """The pulsar_ml_* gauges under Apache's exact, mixed-case names."""

    def __init__(self, metrics: BrokerMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[prometheus_client.metrics_core.Metric]:
        samples = self._metrics.ledger_samples
        for name, (description, read) in MANAGED_LEDGER_GAUGES.items():
            family = prometheus_client.metrics_core.GaugeMetricFamily(
                name, description, labels=["cluster", "namespace"])
            for sample in samples:
                family.add_metric([sample.labels["cluster"], sample.labels["namespace"]],
                                  read(sample))
            yield family
        sampler = self._metrics.ledger_sampler
        yield from ml_metrics.ledger_families(
            [(s.labels["cluster"], s.labels["namespace"], s.ledger_growth) for s in samples],
            sampler.interval_s)
        service = self._metrics.service
        yield from ml_metrics.cache_families(
            service.config.cluster_name, service.ledger_factory.cache_counts(), sampler)


class _ConnectionCollector(prometheus_client.registry.Collector):
    """The broker's connection gauges, labelled as Apache labels them."""

    def __init__(self, service: BrokerService) -> None:
        self._service = service

    def collect(self) -> Iterable[prometheus_client.metrics_core.Metric]:
        conf = self._service.config
        labels = [conf.cluster_name, conf.advertised_address, CONNECTION_METRIC_LABEL]
        for name, (description, read) in CONNECTION_GAUGES.items():
            family = prometheus_client.metrics_core.GaugeMetricFamily(
                name, description, labels=["cluster", "broker", "metric"])
            family.add_metric(labels, read(self._service.connections))
            yield family
        throttled = prometheus_client.metrics_core.GaugeMetricFamily(
            "pulsar_broker_throttled_connections",
            "Connections whose reading is paused now (pending publish requests or publish rate)",
            labels=["cluster"])
        throttled.add_metric([conf.cluster_name], self._service.telemetry.throttled_connections)
        yield throttled


def install(app: web.Application, service: BrokerService,
            interval_s: float = rates.RATE_INTERVAL_S) -> None:
    """Give app its own metrics and the `/metrics` route (after rates.install), and take the
    managed ledgers' counters every interval_s while the app runs."""
    metrics = BrokerMetrics(service, app[rates.TRACKER_KEY])
    service.telemetry.add(metrics)
    app[METRICS_KEY] = metrics

    async def scrape(request: web.Request) -> web.Response:
        body = metrics.render()
        return web.Response(body=body, headers={"Content-Type": TEXT_FORMAT_CONTENT_TYPE})

    async def stop(app: web.Application) -> None:
        metrics.shutdown()

    async def sampling(app: web.Application) -> AsyncIterator[None]:
        async def loop() -> None:
            while True:
                try:
                    metrics.sample_ledgers(time.monotonic())
                except Exception:  # the next interval tries again
                    log.exception("taking the managed ledgers' counters failed")
                await asyncio.sleep(interval_s)

        task = asyncio.create_task(loop(), name="web-ledger-stats-sampler")
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    app.router.add_get("/metrics", scrape)
    app.router.add_get("/metrics/", scrape)
    app.on_cleanup.append(stop)
    app.cleanup_ctx.append(sampling)
