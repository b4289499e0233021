"""A cluster behind `pulsar proxy`: two brokers found through their registrations in etcd,
clients that reach them only through the proxy, and a broker SIGKILLed under them."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import local_cluster, resources
from pulsar_broker.testing import broker_id, close_after_broker_death, one_topic_per_bundle, owned
from pulsar_common.testing import wait_until

SESSION_TIMEOUT_MS = 4000


@pytest.fixture
def proxied(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    cluster = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=2, brokers=2, ensemble=2, write_quorum=2, ack_quorum=2,
        broker_overrides={"metadataStoreSessionTimeoutMillis": str(SESSION_TIMEOUT_MS)},
        journal_sync=False, proxies=1)
    cluster.start()
    yield cluster
    cluster.stop()


def test_clients_through_the_proxy_survive_a_killed_broker_and_lose_nothing(proxied):
    first, second = proxied.brokers
    (proxy,) = proxied.proxies
    assert proxied.service_url == proxy.service_url
    topics = list(one_topic_per_bundle().values())
    client = pulsar.Client(proxied.service_url, operation_timeout_seconds=60)
    consumers = [client.subscribe(t, "sub") for t in topics]
    producers = [client.create_producer(t, batching_enabled=False, send_timeout_millis=60_000)
                 for t in topics]
    for topic, producer in zip(topics, producers, strict=True):
        for i in range(30):
            producer.send(b"%s-%d" % (topic.encode(), i))
    assert owned(first) and owned(second), "both brokers serve bundles through the proxy"

    second.kill()
    for topic, producer in zip(topics, producers, strict=True):
        for i in range(30, 60):
            producer.send(b"%s-%d" % (topic.encode(), i))
    for topic, consumer in zip(topics, consumers, strict=True):
        seen: set[bytes] = set()
        while len(seen) < 60:  # unacknowledged: the failover redelivers what was not acked
            seen.add(consumer.receive(30_000).data())
        assert seen == {b"%s-%d" % (topic.encode(), i) for i in range(60)}
    close_after_broker_death(client)

    client = pulsar.Client(proxied.service_url, operation_timeout_seconds=30)
    try:
        for topic in topics:
            reader = client.create_reader(topic, pulsar.MessageId.earliest)
            stored = [reader.read_next(10_000).data() for _ in range(60)]
            assert stored == [b"%s-%d" % (topic.encode(), i) for i in range(60)]
    finally:
        client.close()
    wait_until(lambda: len(owned(first)) == resources.DEFAULT_BUNDLES, 30, "survivor owns all")


def test_admin_through_the_proxy_reaches_every_broker(proxied):
    (proxy,) = proxied.proxies
    topics = list(one_topic_per_bundle().values())
    client = pulsar.Client(proxied.service_url, operation_timeout_seconds=30)
    try:
        for topic in topics:
            client.create_producer(topic).send(b"x")
    finally:
        client.close()
    for topic in topics:
        path = topic.replace("persistent://", "persistent/")
        with urllib.request.urlopen(f"{proxy.web_url}/admin/v2/{path}/stats", timeout=30) as r:
            assert json.loads(r.read())["msgInCounter"] == 1  # answered by the topic's owner
    for broker in proxied.brokers:
        url = f"{proxy.web_url}/metrics/broker/{broker_id(broker)}"
        with urllib.request.urlopen(url, timeout=30) as reply:
            assert b"pulsar_" in reply.read()


def test_local_cluster_command_prints_the_proxy_as_service_url(tmp_path):
    process = subprocess.Popen(
        [sys.executable, "-m", "pulsar_common.cli.main", "local-cluster",
         "--data-dir", str(tmp_path / "lc"), "--bookies", "1", "--brokers", "1",
         "--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1", "--proxies", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        lines: list[str] = []
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if line.startswith("service URL"):
                break
        text = "".join(lines)
        proxy_line = re.search(r"^proxy\s+(pulsar://\S+)\s+(http://\S+)", text, re.MULTILINE)
        assert proxy_line, text
        banner = re.search(r"^service URL (\S+), web URL (\S+);", text, re.MULTILINE)
        assert banner and banner.groups() == proxy_line.groups(), text
        client = pulsar.Client(banner[1], operation_timeout_seconds=30)
        try:
            consumer = client.subscribe("via-local-proxy", "s")
            client.create_producer("via-local-proxy").send(b"hello")
            assert consumer.receive(10_000).data() == b"hello"
        finally:
            client.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
