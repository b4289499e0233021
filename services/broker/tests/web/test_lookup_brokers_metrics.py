"""HTTP lookup (and the official client over http://), health, broker lists and /metrics."""

from __future__ import annotations

import importlib.metadata
import re
from typing import TYPE_CHECKING

import pulsar
from prometheus_client.parser import text_string_to_metric_families
from pulsar_broker import testing as broker_testing

if TYPE_CHECKING:
    from conftest import Http


def test_lookup_answers_this_broker(http: Http, standalone: broker_testing.StandaloneProcess,
                                    unique: str) -> None:
    data = http.get(f"/lookup/v2/topic/persistent/public/default/look-{unique}").json()
    assert data["brokerUrl"] == standalone.service_url
    assert data["httpUrl"] == standalone.web_url
    assert data["brokerUrlTls"] == "" and data["httpUrlTls"] == ""
    assert http.get(f"/lookup/v2/topic/persistent/public/none-{unique}/t").status == 404


def test_official_client_produces_and_consumes_through_the_http_service_url(
        http: Http, standalone: broker_testing.StandaloneProcess, unique: str) -> None:
    http.put(f"/admin/v2/persistent/public/default/viahttp-{unique}/partitions", 2)
    client = pulsar.Client(standalone.web_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        topic = f"persistent://public/default/viahttp-{unique}"
        consumer = client.subscribe(topic, "s")
        producer = client.create_producer(topic)
        sent = {f"h{i}".encode() for i in range(10)}
        for payload in sorted(sent):
            producer.send(payload)
        received = {consumer.receive(10_000).data() for _ in range(10)}
        assert received == sent
        assert len(client.get_topic_partitions(topic)) == 2
    finally:
        client.close()


def test_health_ready_and_status_page(http: Http) -> None:
    health = http.get("/admin/v2/brokers/health")
    assert (health.status, health.body) == (200, b"ok")
    assert http.get("/admin/v2/brokers/ready").body == b"ok"
    assert http.get("/status.html").body == b"OK"


def test_broker_lists_and_leader(http: Http, standalone: broker_testing.StandaloneProcess) -> None:
    broker_id = f"127.0.0.1:{standalone.web_port}"
    assert http.get("/admin/v2/brokers/standalone").json() == [broker_id]
    assert http.get("/admin/v2/brokers/leaderBroker").json()["serviceUrl"] == standalone.web_url
    assert http.get("/admin/v2/brokers/no-such-cluster").status == 404
    assert http.get("/admin/v2/brokers/version").body.decode() == importlib.metadata.version(
        "pulsar-py")
    assert "dispatchThrottlingRatePerTopicInMsg" in http.get(
        "/admin/v2/brokers/configuration").json()


def test_metrics_are_prometheus_text_per_topic(http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/metrics-{unique}"
    consumer = client.subscribe(topic, "s")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(4):
        producer.send(b"x" * 10)
    for _ in range(4):
        consumer.acknowledge(consumer.receive(10_000))
    reply = http.get("/metrics")
    assert reply.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    families = list(text_string_to_metric_families(reply.body.decode()))
    types = {family.name: family.type for family in families}
    values = {s.name: s.value for family in families for s in family.samples
              if s.labels.get("topic") == topic}
    assert values["pulsar_in_messages_total"] == 4
    assert values["pulsar_in_bytes_total"] > 40
    assert values["pulsar_out_messages_total"] == 4
    assert values["pulsar_producers_count"] == 1
    assert values["pulsar_consumers_count"] == 1
    assert values["pulsar_subscriptions_count"] == 1
    assert "pulsar_msg_backlog" in values  # Acks are grouped by the client: no exact value.
    assert values["pulsar_storage_size"] > 0
    assert "pulsar_rate_in" in values
    assert types["pulsar_in_messages"] == "counter"
    assert types["pulsar_msg_backlog"] == "gauge"
    labels = next(s.labels for family in families for s in family.samples
                  if s.name == "pulsar_in_messages_total" and s.labels.get("topic") == topic)
    assert labels == {"cluster": "standalone", "namespace": "public/default", "topic": topic}
    # Every publish was timed and sized in Apache's add-entry buckets.
    assert values["pulsar_storage_write_latency_count"] == 4
    assert values["pulsar_entry_size_count"] == 4
    assert sum(v for name, v in values.items()
               if name.startswith("pulsar_entry_size_le_")) == 4
    producer.close()
    consumer.close()


def test_regex_subscription_over_http_lists_the_namespace_topics(
        http: Http, standalone: broker_testing.StandaloneProcess, unique: str) -> None:
    ns = f"public/rx-{unique}"
    http.put(f"/admin/v2/namespaces/{ns}")
    for name in ("rx-a", "rx-b", "other"):
        assert http.put(f"/admin/v2/persistent/{ns}/{name}").status == 204
    client = pulsar.Client(standalone.web_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    try:
        consumer = client.subscribe(re.compile(f"persistent://{ns}/rx-.*"), "s",
                                    initial_position=pulsar.InitialPosition.Earliest)
        for name in ("rx-a", "rx-b", "other"):
            client.create_producer(f"persistent://{ns}/{name}").send(name.encode())
        received = {consumer.receive(10_000).data() for _ in range(2)}
        assert received == {b"rx-a", b"rx-b"}
    finally:
        client.close()
