"""On a cluster (etcd, two bookies, two brokers): a policy changed through one broker's
admin API reaches a topic served by the other one, and a namespace's persistence policy
decides the ensemble and quorums of the topic's new ledgers on real bookies, and a dynamic
broker setting changed through one broker applies on the other."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest
from pulsar_broker import local_cluster
from pulsar_broker.testing import BrokerProcess
from pulsar_common.testing import wait_until


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[local_cluster.LocalCluster]:
    running = local_cluster.LocalCluster(
        tmp_path_factory.mktemp("policies-cluster"), bookies=2, brokers=2, ensemble=1,
        write_quorum=1, ack_quorum=1, journal_sync=False,
        broker_overrides={"managedLedgerMaxEntriesPerLedger": "5",
                          "managedLedgerMinLedgerRolloverTimeMinutes": "0",
                          "messageExpiryCheckIntervalSeconds": "0.5"})
    running.start()
    yield running
    running.stop()


def _call(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as reply:  # follows 307 to the owner
        raw = reply.read()
    return json.loads(raw) if raw else None


def _owner_and_other(cluster: local_cluster.LocalCluster,
                     topic: str) -> tuple[BrokerProcess, BrokerProcess]:
    path = topic.replace("://", "/")
    found = _call("GET", f"{cluster.web_url}/lookup/v2/topic/{path}")["brokerUrl"]
    first, second = cluster.brokers
    return (first, second) if first.service_url == found else (second, first)


def test_policies_set_on_one_broker_apply_to_topics_served_by_the_other(cluster):
    ns = f"public/cluster-{uuid.uuid4().hex[:6]}"
    topic = f"persistent://{ns}/t"
    path = topic.replace("://", "/")
    _call("PUT", f"{cluster.web_url}/admin/v2/namespaces/{ns}")
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        owner, other = _owner_and_other(cluster, topic)
        _call("PUT", f"{owner.web_url}/admin/v2/{path}/subscription/idle")
        for _ in range(3):
            producer.send(b"before")
        _call("POST", f"{other.web_url}/admin/v2/namespaces/{ns}/persistence", {
            "bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 2, "bookkeeperAckQuorum": 2,
            "managedLedgerMaxMarkDeleteRate": 0})
        _call("POST", f"{other.web_url}/admin/v2/namespaces/{ns}/messageTTL", 1)

        def backlog() -> int:
            stats = _call("GET", f"{owner.web_url}/admin/v2/{path}/stats")
            return int(stats["subscriptions"]["idle"]["msgBacklog"])

        wait_until(lambda: backlog() == 0, 30, "the TTL set on the other broker expired messages")
        # Past the current ledger's 5 entries the topic rolls over: the new ledger is
        # striped over both bookies.
        for _ in range(5):
            producer.send(b"after")
        stats = _call("GET", f"{owner.web_url}/admin/v2/{path}/internalStats?metadata=true")
        quorums = [(m["ensembleSize"], m["writeQuorumSize"], m["ackQuorumSize"])
                   for m in (json.loads(ledger["metadata"]) for ledger in stats["ledgers"])]
        assert quorums[0] == (1, 1, 1) and quorums[-1] == (2, 2, 2), quorums
        newest = json.loads(stats["ledgers"][-1]["metadata"])
        assert len(set(newest["ensembles"][0]["bookies"])) == 2, newest
    finally:
        client.close()


def test_a_dynamic_setting_changed_on_one_broker_applies_on_the_other(cluster):
    """pulsar-admin brokers update-dynamic-config through one broker: the other broker,
    which serves the topic, throttles its dispatch with the new default at once."""
    ns = f"public/dynamic-{uuid.uuid4().hex[:6]}"
    topic = f"persistent://{ns}/t"
    _call("PUT", f"{cluster.web_url}/admin/v2/namespaces/{ns}")
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=30)
    configuration = "/admin/v2/brokers/configuration"
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        owner, other = _owner_and_other(cluster, topic)
        _call("PUT", f"{owner.web_url}/admin/v2/{topic.replace('://', '/')}/subscription/s")
        for _ in range(200):
            producer.send_async(b"m", None)
        producer.flush()
        _call("POST", f"{other.web_url}{configuration}/dispatchThrottlingRatePerTopicInMsg/20")
        wait_until(lambda: _call("GET", f"{owner.web_url}{configuration}/runtime")[
            "dispatchThrottlingRatePerTopicInMsg"] == "20", 10, "the owner saw the new value")
        assert _call("GET", f"{owner.web_url}{configuration}/values") == {
            "dispatchThrottlingRatePerTopicInMsg": "20"}
        consumer = client.subscribe(topic, "s")
        received, until = 0, time.monotonic() + 2.0
        while time.monotonic() < until:
            with contextlib.suppress(pulsar.Timeout):
                consumer.acknowledge(consumer.receive(timeout_millis=100))
                received += 1
        # A full bucket (20), then 20 a second: about 60 in 2 s, far from the 200 waiting.
        assert 40 <= received <= 80, received
    finally:
        _call("DELETE", f"{other.web_url}{configuration}/dispatchThrottlingRatePerTopicInMsg")
        client.close()


def test_namespace_isolation_policies_decide_which_broker_owns_a_namespace(cluster):
    """A namespace a policy names goes to its primary broker; one no policy names goes to
    the brokers no policy names."""
    first, second = cluster.brokers
    isolated, shared = (f"public/iso-{uuid.uuid4().hex[:6]}" for _ in range(2))
    for ns in (isolated, shared):
        _call("PUT", f"{cluster.web_url}/admin/v2/namespaces/{ns}")
    policies = (f"{first.web_url}/admin/v2/clusters/{local_cluster.CLUSTER_NAME}"
                "/namespaceIsolationPolicies")
    _call("POST", f"{policies}/only-second", {
        "namespaces": [isolated], "primary": [f"127\\.0\\.0\\.1:{second.web_port}"],
        "secondary": [], "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"}}})
    try:
        for round_ in range(3):
            for ns, owner in ((isolated, second), (shared, first)):
                found = _call("GET", f"{first.web_url}/lookup/v2/topic/persistent/{ns}/"
                                     f"t{round_}")["brokerUrl"]
                assert found == owner.service_url, (ns, round_, found)
    finally:
        _call("DELETE", f"{policies}/only-second")
