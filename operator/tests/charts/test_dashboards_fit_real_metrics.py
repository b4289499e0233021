"""Every series the chart's Grafana dashboards read is one our processes really export.

A local cluster in the shape the operator runs on Kubernetes (etcd, a `pulsar bookie`
process with its HTTP port, a `pulsar broker`, a `pulsar proxy` in front) carries a
little traffic from the official client through the proxy, with a subscription still
open; then each component's /metrics is scraped, as the chart's monitors would, and
each dashboard's queries are held against its own component's series: every series
name must be there, and every label a query matches or groups on must be on those
series or be one Prometheus adds to targets.
"""

from __future__ import annotations

import urllib.request
import uuid
from collections.abc import Iterator

import pulsar
import pytest
from prometheus_client import parser
from pulsar_broker import local_cluster

from . import dashboards

pytestmark = pytest.mark.slow

#: Labels Prometheus itself puts on the targets of the chart's monitors (Kubernetes service
#: discovery plus the monitors' relabelings); a query may match or group on them.
TARGET_LABELS = frozenset({"job", "instance", "pod", "container", "endpoint", "kubernetes_namespace"})
#: Series name -> the label names seen on its samples.
Exported = dict[str, set[str]]


def scrape(url: str) -> Exported:
    with urllib.request.urlopen(url + "/metrics", timeout=30) as reply:
        text = reply.read().decode()
    exported: Exported = {}
    for family in parser.text_string_to_metric_families(text):
        for sample in family.samples:
            exported.setdefault(sample.name, set()).update(sample.labels)
    return exported


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Exported]]:
    """component -> what its /metrics served after some traffic."""
    cluster = local_cluster.LocalCluster(tmp_path_factory.mktemp("metrics") / "cluster", bookies=1,
                                         brokers=1, ensemble=1, write_quorum=1, ack_quorum=1,
                                         proxies=1)
    # As the chart's default (autoRecovery.enabled): the bookie runs the auditor and workers.
    cluster.bookies[0].settings["autoRecoveryDaemonEnabled"] = "true"
    cluster.start()
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        topic = f"persistent://public/default/dashboards-{uuid.uuid4().hex[:8]}"
        consumer = client.subscribe(topic, "dashboards")
        producer = client.create_producer(topic)
        for i in range(20):
            producer.send(f"message {i}".encode())
        for _ in range(10):
            consumer.acknowledge(consumer.receive(timeout_millis=30_000))
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        reader.read_next(timeout_millis=30_000)
        yield {"broker": scrape(cluster.brokers[0].web_url),
               "bookie": scrape(cluster.bookies[0].http_url),
               "proxy": scrape(cluster.proxies[0].web_url)}
    finally:
        client.close()
        cluster.stop()


@pytest.mark.parametrize("stem", sorted(dashboards.COMPONENTS))
def test_every_series_a_dashboard_reads_is_exported_by_its_component(
    stem: str, exported: dict[str, Exported]
) -> None:
    series = exported[dashboards.COMPONENTS[stem]]
    missing = {}
    for where, expression in dashboards.expressions(dashboards.load(stem)):
        absent = dashboards.read_by(expression).metrics - set(series)
        if absent:
            missing[where] = sorted(absent)
    assert missing == {}, f"{stem} reads series its component does not export"


@pytest.mark.parametrize("stem", sorted(dashboards.COMPONENTS))
def test_every_label_a_dashboard_matches_or_groups_on_exists(
    stem: str, exported: dict[str, Exported]
) -> None:
    series = exported[dashboards.COMPONENTS[stem]]
    unknown = {}
    for where, expression in dashboards.expressions(dashboards.load(stem)):
        reads = dashboards.read_by(expression)
        on_series = set().union(*(series.get(name, set()) for name in reads.metrics))
        for name, labels in reads.matcher_labels.items():
            if extra := labels - series.get(name, set()) - TARGET_LABELS:
                unknown[f"{where}: {name}"] = sorted(extra)
        if extra := reads.grouping_labels - on_series - TARGET_LABELS:
            unknown[f"{where}: grouping"] = sorted(extra)
    assert unknown == {}, f"{stem} uses labels its series do not have"


def test_the_scrape_saw_each_component_at_work(exported: dict[str, Exported]) -> None:
    """Guards the two tests above against a scrape of idle or wrong processes."""
    assert "pulsar_subscription_back_log" in exported["broker"]
    assert "bookkeeper_server_add_entry_request_seconds_bucket" in exported["bookie"]
    assert "bookie_autorecovery_auditor" in exported["bookie"]
    assert "pulsar_proxy_binary_bytes_total" in exported["proxy"]
    assert not any(name.startswith("pulsar_proxy_") for name in exported["broker"])
