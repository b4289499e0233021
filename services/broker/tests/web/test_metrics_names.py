"""/metrics against Apache's metric reference: names, types, labels, counts that survive
consumer churn, the broker's connection counts as an official client opens and closes
connections, and a connection paused by a publish rate counted as throttled."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pulsar
from prometheus_client.parser import text_string_to_metric_families
from pulsar_common import process_metrics

if TYPE_CHECKING:
    from pulsar_broker import testing as broker_testing

    from conftest import Http

#: Apache's broker series (reference-metrics: topic, namespace, subscription, managed ledger
#: cache sections) that this broker serves, with their Prometheus types and scope.
APACHE_TOPIC_SERIES = {
    "pulsar_subscriptions_count": "gauge", "pulsar_producers_count": "gauge",
    "pulsar_consumers_count": "gauge", "pulsar_rate_in": "gauge", "pulsar_rate_out": "gauge",
    "pulsar_throughput_in": "gauge", "pulsar_throughput_out": "gauge",
    "pulsar_storage_size": "gauge", "pulsar_storage_backlog_size": "gauge",
    "pulsar_storage_offloaded_size": "gauge", "pulsar_msg_backlog": "gauge",
    "pulsar_storage_write_rate": "gauge", "pulsar_storage_read_rate": "gauge",
    "pulsar_in_bytes_total": "counter", "pulsar_in_messages_total": "counter",
    "pulsar_out_bytes_total": "counter", "pulsar_out_messages_total": "counter",
    **{f"pulsar_storage_write_latency_le_{b}": "gauge"
       for b in ("0_5", "1", "5", "10", "20", "50", "100", "200", "1000", "overflow")},
    "pulsar_storage_write_latency_count": "gauge", "pulsar_storage_write_latency_sum": "gauge",
    **{f"pulsar_entry_size_le_{b}": "gauge"
       for b in ("128", "512", "1_kb", "2_kb", "4_kb", "16_kb", "100_kb", "1_mb", "overflow")},
    "pulsar_entry_size_count": "gauge", "pulsar_entry_size_sum": "gauge",
}
APACHE_SUBSCRIPTION_SERIES = {
    "pulsar_subscription_back_log", "pulsar_subscription_delayed",
    "pulsar_subscription_unacked_messages", "pulsar_subscription_blocked_on_unacked_messages",
    "pulsar_subscription_msg_rate_out", "pulsar_subscription_msg_throughput_out",
}
APACHE_NAMESPACE_SERIES = {"pulsar_topics_count"}
APACHE_CLUSTER_SERIES = {"pulsar_ml_count"}
#: Apache's managed-ledger series (labels cluster and namespace, the namespace followed by
#: "/persistent": the prefix of its ledgers' names).
APACHE_MANAGED_LEDGER_SERIES = {
    "pulsar_ml_AddEntryMessagesRate", "pulsar_ml_AddEntryBytesRate", "pulsar_ml_ReadEntriesRate",
    "pulsar_ml_ReadEntriesBytesRate", "pulsar_ml_NumberOfMessagesInBacklog",
    "pulsar_ml_StoredMessagesSize", "pulsar_ml_AddEntrySucceed", "pulsar_ml_AddEntryErrors",
    "pulsar_ml_ReadEntriesSucceeded", "pulsar_ml_ReadEntriesErrors",
    "pulsar_ml_AddEntryWithReplicasBytesRate", "pulsar_ml_ReadEntriesOpsCacheMissesRate",
    "pulsar_ml_MarkDeleteRate", "pulsar_ml_AddEntryLatencyBuckets_OVERFLOW",
    "pulsar_ml_LedgerAddEntryLatencyBuckets_OVERFLOW",
    "pulsar_ml_LedgerSwitchLatencyBuckets_OVERFLOW", "pulsar_ml_EntrySizeBuckets_OVERFLOW",
}
#: Apache's managed-ledger bucket series: one sample per bucket, told apart by the `quantile`
#: label (Apache's reference lists these values), the last bucket in the _OVERFLOW series.
APACHE_LATENCY_QUANTILES = ["0.0_0.5", "0.5_1.0", "1.0_5.0", "5.0_10.0", "10.0_20.0",
                            "20.0_50.0", "50.0_100.0", "100.0_200.0", "200.0_1000.0"]
APACHE_MANAGED_LEDGER_BUCKETS = {
    "pulsar_ml_AddEntryLatencyBuckets": APACHE_LATENCY_QUANTILES,
    "pulsar_ml_LedgerAddEntryLatencyBuckets": APACHE_LATENCY_QUANTILES,
    "pulsar_ml_LedgerSwitchLatencyBuckets": APACHE_LATENCY_QUANTILES,
    "pulsar_ml_EntrySizeBuckets": [
        "0.0_128.0", "128.0_512.0", "512.0_1024.0", "1024.0_2048.0", "2048.0_4096.0",
        "4096.0_16384.0", "16384.0_102400.0", "102400.0_1232896.0"],
}
#: Apache's broker-wide gauges labelled `cluster` only: the managed-ledger cache statistics
#: and the throttled connections (the cache's pool_* series describe Netty's allocator).
APACHE_BROKER_SERIES = {
    "pulsar_ml_cache_evictions", "pulsar_ml_cache_hits_rate", "pulsar_ml_cache_hits_throughput",
    "pulsar_ml_cache_misses_rate", "pulsar_ml_cache_misses_throughput",
    "pulsar_ml_cache_used_size", "pulsar_ml_cache_entries",
    "pulsar_ml_cache_inserted_entries_total", "pulsar_ml_cache_evicted_entries_total",
    "pulsar_broker_throttled_connections",
}
#: Apache's broker connection series (reference-metrics, "Connection metrics"): gauges labelled
#: cluster, broker (the advertised address) and metric="broker_connection".
APACHE_CONNECTION_SERIES = {
    "pulsar_active_connections", "pulsar_connection_created_total_count",
    "pulsar_connection_create_success_count", "pulsar_connection_create_fail_count",
    "pulsar_connection_closed_total_count",
}
#: Series of our own process (prometheus_client's collectors; Apache's JVM has jvm_* instead).
PROCESS_SERIES = set(process_metrics.PROCESS_SERIES)


def scrape(http: Http) -> list[Any]:
    return list(text_string_to_metric_families(http.get("/metrics").body.decode()))


def test_the_series_are_apaches_names_types_and_labels(http: Http, client: pulsar.Client,
                                                        unique: str) -> None:
    topic = f"persistent://public/default/names-{unique}"
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(3):
        producer.send(b"y" * 50)
    consumer.receive(10_000)  # one received, none acknowledged: unacked messages
    families = scrape(http)
    samples = [s for family in families for s in family.samples]
    topic_samples = {s.name: s for s in samples if s.labels.get("topic") == topic}
    for name, kind in APACHE_TOPIC_SERIES.items():
        assert name in topic_samples, name
        family = next(f for f in families if name.startswith(f.name))
        assert family.type == kind, (name, family.type)
        if name not in APACHE_SUBSCRIPTION_SERIES:
            assert set(topic_samples[name].labels) == {"cluster", "namespace", "topic"}, name
    for name in APACHE_SUBSCRIPTION_SERIES:
        sub = [s for s in samples if s.name == name and s.labels.get("topic") == topic]
        assert [s.labels["subscription"] for s in sub] == ["sub"], name
    unacked = next(s for s in samples if s.name == "pulsar_subscription_unacked_messages"
                   and s.labels.get("topic") == topic)
    assert unacked.value >= 1
    assert topic_samples["pulsar_storage_backlog_size"].value > 0
    topics_count = [s for s in samples if s.name == "pulsar_topics_count"
                    and s.labels.get("namespace") == "public/default"]
    assert len(topics_count) == 1 and topics_count[0].value >= 1
    assert set(topics_count[0].labels) == {"cluster", "namespace"}
    for name in APACHE_MANAGED_LEDGER_SERIES:
        family = next(f for f in families if f.name == name)
        assert family.type == "gauge", name
        ledgers = [s for s in family.samples
                   if s.labels.get("namespace") == "public/default/persistent"]
        assert len(ledgers) == 1 and set(ledgers[0].labels) == {"cluster", "namespace"}, name
    for name, quantiles in APACHE_MANAGED_LEDGER_BUCKETS.items():
        family = next(f for f in families if f.name == name)
        assert family.type == "gauge", name
        buckets = [s for s in family.samples
                   if s.labels.get("namespace") == "public/default/persistent"]
        assert [s.labels["quantile"] for s in buckets] == quantiles, name
        assert {frozenset(s.labels) for s in buckets} == {
            frozenset({"cluster", "namespace", "quantile"})}, name
    for name in APACHE_BROKER_SERIES:
        family = next(f for f in families if f.name == name)
        assert family.type == "gauge", name
        [sample] = family.samples
        assert sample.labels == {"cluster": "standalone"}, name
    names = {s.name for s in samples}
    assert APACHE_CLUSTER_SERIES | PROCESS_SERIES <= names
    # Nothing named pulsar_* that Apache does not have.
    ours = {n for n in names if n.startswith("pulsar_")}
    known = (set(APACHE_TOPIC_SERIES) | APACHE_SUBSCRIPTION_SERIES | APACHE_NAMESPACE_SERIES
             | APACHE_CLUSTER_SERIES | APACHE_MANAGED_LEDGER_SERIES | APACHE_CONNECTION_SERIES
             | set(APACHE_MANAGED_LEDGER_BUCKETS) | APACHE_BROKER_SERIES
             | {"pulsar_subscription_delayed"})
    assert ours <= known, ours - known
    producer.close()
    consumer.close()


def test_out_counters_keep_what_a_consumer_received_after_the_last_scrape(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/churn-{unique}"
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(5):
        producer.send(b"z")
    for _ in range(2):
        consumer.acknowledge(consumer.receive(10_000))

    def out_messages() -> float:
        return next(s.value for f in scrape(http) for s in f.samples
                    if s.name == "pulsar_out_messages_total" and s.labels.get("topic") == topic)

    assert out_messages() >= 2
    for _ in range(3):
        consumer.acknowledge(consumer.receive(10_000))
    consumer.close()  # gone before the next scrape, with 5 dispatched in all
    assert out_messages() == 5
    producer.close()


def connection_counts(http: Http) -> dict[str, float]:
    """The connection gauges, each checked for Apache's type and labels."""
    counts: dict[str, float] = {}
    for family in scrape(http):
        if family.name in APACHE_CONNECTION_SERIES:
            assert family.type == "gauge", family.name
            [sample] = family.samples
            assert set(sample.labels) == {"cluster", "broker", "metric"}, sample.labels
            assert sample.labels["metric"] == "broker_connection"
            assert sample.labels["cluster"] == "standalone" and sample.labels["broker"]
            counts[family.name] = sample.value
    assert set(counts) == APACHE_CONNECTION_SERIES
    assert counts["pulsar_active_connections"] == (
        counts["pulsar_connection_created_total_count"]
        - counts["pulsar_connection_closed_total_count"])
    return counts


def test_connections_opened_and_closed_by_a_client_are_counted(
        http: Http, standalone: broker_testing.StandaloneProcess, unique: str) -> None:
    before = connection_counts(http)
    clients = [pulsar.Client(standalone.service_url) for _ in range(2)]
    for index, client in enumerate(clients):  # a client connects with its first producer
        client.create_producer(f"persistent://public/default/cnx-{unique}-{index}").close()
    opened = connection_counts(http)
    assert (opened["pulsar_connection_created_total_count"]
            >= before["pulsar_connection_created_total_count"] + 2)
    assert (opened["pulsar_connection_create_success_count"]
            >= before["pulsar_connection_create_success_count"] + 2)
    assert opened["pulsar_active_connections"] >= 2
    for client in clients:
        client.close()
    deadline = time.monotonic() + 10.0
    while True:
        closed = connection_counts(http)
        if (closed["pulsar_connection_closed_total_count"]
                >= opened["pulsar_connection_closed_total_count"] + 2):
            break
        assert time.monotonic() < deadline, (opened, closed)
        time.sleep(0.05)
    assert closed["pulsar_connection_create_fail_count"] == before[
        "pulsar_connection_create_fail_count"]


def throttled_connections(http: Http) -> float:
    family = next(f for f in scrape(http) if f.name == "pulsar_broker_throttled_connections")
    [sample] = family.samples
    return float(sample.value)


def test_a_connection_paused_by_a_publish_rate_counts_as_throttled_until_it_resumes(
        http: Http, client: pulsar.Client, unique: str) -> None:
    namespace = f"public/throttled-{unique}"
    assert http.put(f"/admin/v2/namespaces/{namespace}").status < 300
    # 1000 bytes per second: a 2000-byte message puts the topic 1.9 s in debt, so the
    # connection stops reading for that long (Apache pauses the channel's reads).
    assert http.post(f"/admin/v2/namespaces/{namespace}/publishRate", {
        "publishThrottlingRateInMsg": -1, "publishThrottlingRateInByte": 1000}).status < 300
    before = throttled_connections(http)
    producer = client.create_producer(f"persistent://{namespace}/rate",
                                      batching_enabled=False)
    producer.send(b"x" * 2000)
    throttled = [throttled_connections(http)]
    deadline = time.monotonic() + 10.0
    while throttled[-1] != before:  # until the pause is over
        assert time.monotonic() < deadline, throttled
        time.sleep(0.05)
        throttled.append(throttled_connections(http))
    assert before + 1 in throttled, throttled
    producer.close()
