"""Three brokers on etcd, a busy namespace of 16 bundles all on one of them: the leader broker
(loadBalancerEnabled) splits the bundle over loadBalancerNamespaceBundleMaxTopics and sheds
bundles until every broker is within the threshold of the average, in at most two shedding
rounds, while official clients keep producing and consuming without an error or a loss."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import local_cluster, resources
from pulsar_broker import testing as broker_testing
from pulsar_broker.loadbalance import model, shedding
from pulsar_broker.loadbalance.settings import SheddingSettings
from pulsar_broker.namespace import bundles
from pulsar_common import naming
from pulsar_common.testing import wait_until

NAMESPACE = "public/busy"
BUNDLES = 16
THRESHOLD = 10.0
#: Usage is bandwidth against a 8 Mbit/s "NIC": 16 topics x 10 msg/s x 4 KB is ~65% of it.
NIC_GBPS = 0.008
PAYLOAD = b"x" * 4096
SEND_INTERVAL_S = 0.1
WEIGHTS = {"loadBalancerCPUResourceWeight": "0", "loadBalancerMemoryResourceWeight": "0",
           "loadBalancerDirectMemoryResourceWeight": "0"}


@pytest.fixture
def three_brokers(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    cluster = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=2, brokers=3, ensemble=2, write_quorum=2, ack_quorum=2,
        journal_sync=False, broker_overrides={
            **WEIGHTS,
            "loadBalancerOverrideBrokerNicSpeedGbps": str(NIC_GBPS),
            "loadBalancerReportUpdateMinIntervalMillis": "1000",
            "loadBalancerSheddingIntervalSeconds": "1",
            "loadBalancerBrokerThresholdShedderPercentage": str(int(THRESHOLD)),
            "loadBalancerBundleUnloadMinThroughputThreshold": "0.2",
            "loadBalancerMaxBundlesToUnloadPerCycle": "16",
            "loadBalancerNamespaceBundleMaxTopics": "1",
            "loadBalancerAutoUnloadSplitBundlesEnabled": "false",
            "defaultNamespaceBundleSplitAlgorithm": "topic_count_equally_divide",
        })
    cluster.start()
    yield cluster
    cluster.stop()


def topic_per_bundle() -> list[str]:
    """One topic name in each of the namespace's 16 bundles, plus a second one in the first."""
    policies = resources.default_policies(BUNDLES)
    found: dict[int, list[str]] = {}
    i = 0
    while len(found) < BUNDLES or len(found[0]) < 2:
        name = f"persistent://{NAMESPACE}/t-{i}"
        bundle = bundles.bundle_of(naming.TopicName.parse(name), policies)
        index = bundles.bundles_of(bundle.namespace, policies).index(bundle)
        if len(found.setdefault(index, [])) < (2 if index == 0 else 1):
            found[index].append(name)
        i += 1
    return [name for index in sorted(found) for name in found[index]]


def put(url: str, body: object = None) -> None:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="PUT",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.status in (200, 204)


def usage_spread(cluster: local_cluster.LocalCluster) -> tuple[float, float]:
    """(highest usage, average usage) over the brokers' load reports, as the planner sees them."""
    conf = SheddingSettings(cpu_weight=0, memory_weight=0, direct_memory_weight=0)
    usage = [shedding.weighted_usage(model.BrokerReport.from_json("b", broker_testing.get_json(
        f"{b.web_url}/admin/v2/broker-stats/load-report")), conf) for b in cluster.brokers]
    return max(usage), sum(usage) / len(usage)


def busy_bundles(broker: broker_testing.ServiceProcess) -> set[str]:
    return {b for b in broker_testing.owned(broker) if b.startswith(NAMESPACE + "/")}


class Traffic:
    """Every SEND_INTERVAL_S one message to each topic; receipts, receptions and errors."""

    def __init__(self, client: pulsar.Client, topics: list[str]) -> None:
        self.producers = [client.create_producer(t, batching_enabled=False) for t in topics]
        self.sent: set[bytes] = set()
        self.received: set[bytes] = set()
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.consumers = [client.subscribe(t, "s", message_listener=self._on_message)
                          for t in topics]
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_message(self, consumer: pulsar.Consumer, message: pulsar.Message) -> None:
        with self._lock:
            self.received.add(message.data()[:32])
        consumer.acknowledge(message)

    def _run(self) -> None:
        sequence = 0
        while not self._stop.is_set():
            for index, producer in enumerate(self.producers):
                key = f"{index}-{sequence}".encode().ljust(32, b".")
                producer.send_async(key + PAYLOAD, self._receipt(key))
            sequence += 1
            self._stop.wait(SEND_INTERVAL_S)

    def _receipt(self, key: bytes):  # type: ignore[no-untyped-def]
        def done(result: pulsar.Result, _id: pulsar.MessageId) -> None:
            with self._lock:
                if result == pulsar.Result.Ok:
                    self.sent.add(key)
                else:
                    self.errors.append(f"{key!r}: {result}")
        return done

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for producer in self.producers:
            producer.flush()


def describe(cluster: local_cluster.LocalCluster) -> str:
    """Usage, bundles and the balancer's log lines of each broker, for a failure message."""
    lines = [f"usage (highest, average): {usage_spread(cluster)}"]
    for broker in cluster.brokers:
        report = broker_testing.get_json(f"{broker.web_url}/admin/v2/broker-stats/load-report")
        lines.append(f"{broker.web_url}: {len(busy_bundles(broker))} bundles, "
                     f"in {report['bandwidthIn']}, out {report['bandwidthOut']}")
        lines += [line for line in broker.log_text().splitlines()
                  if "loadbalance" in line or "load balancing" in line][-15:]
    return "\n".join(lines)


def shedding_rounds(cluster: local_cluster.LocalCluster) -> list[int]:
    """Unloads of each leader round that moved bundles, from the leader's log."""
    leader = broker_testing.get_json(f"{cluster.brokers[0].web_url}/admin/v2/brokers/leaderBroker")
    process = next(b for b in cluster.brokers if b.web_url == leader["serviceUrl"])
    found = re.findall(r"load balancing round \d+: \d+ splits, (\d+) unloads", process.log_text())
    return [int(n) for n in found if int(n) > 0]


def lookup(broker: broker_testing.ServiceProcess, topic: str) -> str:
    path = topic.replace("persistent://", "persistent/")
    return str(broker_testing.get_json(f"{broker.web_url}/lookup/v2/topic/{path}")["brokerUrl"])


def unload_to_a_destination(cluster: local_cluster.LocalCluster, topic: str) -> None:
    """An unload naming a destination broker: the next lookup, on any broker, lands there."""
    owner = next(b for b in cluster.brokers if lookup(b, topic) == b.service_url)
    destination = next(b for b in cluster.brokers if b is not owner)
    bundle = bundles.bundle_of(naming.TopicName.parse(topic), broker_testing.get_json(
        f"{owner.web_url}/admin/v2/namespaces/{NAMESPACE}"))
    put(f"{owner.web_url}/admin/v2/namespaces/{NAMESPACE}/{bundle.range}/unload"
        f"?destinationBroker={broker_testing.broker_id(destination)}")
    bystander = next(b for b in cluster.brokers if b is not owner and b is not destination)
    assert lookup(bystander, topic) == destination.service_url
    assert str(bundle) in busy_bundles(destination)


def test_the_leader_spreads_a_busy_namespace_within_two_rounds_without_losing_a_message(
        three_brokers: local_cluster.LocalCluster) -> None:
    cluster = three_brokers
    first = cluster.brokers[0]
    put(f"{first.web_url}/admin/v2/namespaces/{NAMESPACE}", {"bundles": {"numBundles": BUNDLES}})
    topics = topic_per_bundle()
    for topic in topics:  # An authoritative lookup makes the first broker take the bundle.
        path = topic.replace("persistent://", "persistent/")
        broker_testing.get_json(f"{first.web_url}/lookup/v2/topic/{path}?authoritative=true")
    assert len(busy_bundles(first)) == BUNDLES

    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        traffic = Traffic(client, topics)
        # The first bundle holds two topics, over loadBalancerNamespaceBundleMaxTopics=1.
        wait_until(lambda: len(broker_testing.get_json(
            f"{first.web_url}/admin/v2/namespaces/{NAMESPACE}/bundles")["boundaries"]) == BUNDLES + 2,
            30, "the leader splits the bundle with two topics")
        traffic.start()
        started = time.monotonic()

        def balanced() -> bool:
            highest, average = usage_spread(cluster)
            return (all(busy_bundles(b) for b in cluster.brokers) and average > 5
                    and highest <= average + THRESHOLD)

        try:
            wait_until(balanced, 45, "every broker within the threshold of the average")
        except TimeoutError as exc:
            raise AssertionError(describe(cluster)) from exc
        spread_after_s = time.monotonic() - started
        rounds = shedding_rounds(cluster)
        traffic.stop()
        wait_until(lambda: traffic.sent <= traffic.received, 30, "every sent message received")
        unload_to_a_destination(cluster, topics[-1])
    finally:
        client.close()
    assert traffic.errors == []
    assert 1 <= len(rounds) <= 2, rounds
    assert sum(len(busy_bundles(b)) for b in cluster.brokers) == BUNDLES + 1
    print(f"balanced {spread_after_s:.1f}s after traffic started, unloads per round {rounds}, "
          f"{len(traffic.sent)} messages sent and received")
