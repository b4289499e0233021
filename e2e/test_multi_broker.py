"""Two brokers share a cluster: every namespace bundle is served by exactly one of them,
clients find the owner from either broker, and the bundles of a SIGKILLed broker move to
the survivor without losing an acknowledged message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import local_cluster, resources
from pulsar_broker.namespace import bundles
from pulsar_broker.testing import (
    broker_id,
    close_after_broker_death,
    get_json,
    one_topic_per_bundle,
    owned,
)
from pulsar_common import naming
from pulsar_common.testing import wait_until

NAMESPACE = naming.NamespaceName("public", "default")
#: Short, so a dead broker's bundles are free again quickly.
SESSION_TIMEOUT_MS = 4000


@pytest.fixture
def two_brokers(tmp_path) -> Iterator[local_cluster.LocalCluster]:
    cluster = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=2, brokers=2, ensemble=2, write_quorum=2, ack_quorum=2,
        broker_overrides={"metadataStoreSessionTimeoutMillis": str(SESSION_TIMEOUT_MS)},
        journal_sync=False)
    cluster.start()
    yield cluster
    cluster.stop()


def pulsar_admin(web_url: str, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main", *args],
                            env={**os.environ, "PULSAR_ADMIN_URL": web_url},
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_bundles_spread_over_both_brokers_and_either_broker_answers(two_brokers):
    first, second = two_brokers.brokers
    assert sorted(get_json(f"{first.web_url}/admin/v2/brokers")) == sorted(  # type: ignore[type-var]
        [broker_id(first), broker_id(second)])
    topics = one_topic_per_bundle()
    client = pulsar.Client(two_brokers.service_url, operation_timeout_seconds=30)
    try:
        for topic in topics.values():
            consumer = client.subscribe(topic, "sub")
            producer = client.create_producer(topic)
            for i in range(20):
                producer.send(b"%s-%d" % (topic.encode(), i))
            assert [consumer.receive(10_000).data() for _ in range(20)] == [
                b"%s-%d" % (topic.encode(), i) for i in range(20)]
            producer.close()
            consumer.close()

        # Each bundle has exactly one owner, and the load is even.
        by_first, by_second = owned(first), owned(second)
        assert not by_first & by_second
        assert by_first | by_second == {str(b) for b in topics}
        assert len(by_first) == len(by_second) == 2

        # Both brokers name the same owner; the admin API of either broker serves every topic.
        for bundle, topic in topics.items():
            path = topic.replace("persistent://", "persistent/")
            owner_url = first.web_url if str(bundle) in by_first else second.web_url
            for broker in (first, second):
                answer = get_json(f"{broker.web_url}/lookup/v2/topic/{path}")
                assert isinstance(answer, dict) and answer["httpUrl"] == owner_url
                stats = get_json(f"{broker.web_url}/admin/v2/{path}/stats")
                assert isinstance(stats, dict) and stats["msgInCounter"] == 20

        # pulsar-admin pointed at one broker follows its redirects, for reads and writes.
        bundle, topic = next((b, t) for b, t in topics.items() if str(b) in by_second)
        assert json.loads(pulsar_admin(first.web_url, "topics", "stats", topic))["msgInCounter"] == 20
        assert pulsar_admin(first.web_url, "topics", "bundle-range", topic).strip() == bundle.range
        assert pulsar_admin(first.web_url, "topics", "lookup", topic).strip() == second.service_url
        pulsar_admin(first.web_url, "namespaces", "unload", "public/default", "--bundle", bundle.range)
        assert owned(second) == by_second - {str(bundle)}
        listed = pulsar_admin(first.web_url, "brokers", "namespaces", "local",
                              "--url", broker_id(second))
        assert set(json.loads(listed)) == by_second - {str(bundle)}

        # Unloading the namespace frees every bundle; producing assigns them again.
        request = urllib.request.Request(
            f"{first.web_url}/admin/v2/namespaces/public/default/unload", method="PUT")
        with urllib.request.urlopen(request, timeout=30) as reply:
            assert reply.status == 204
        assert owned(first) == owned(second) == set()
        for topic in topics.values():
            client.create_producer(topic).send(b"after unload")
        assert owned(first) | owned(second) == {str(b) for b in topics}
    finally:
        client.close()


def test_a_killed_brokers_bundles_move_to_the_survivor_and_nothing_acked_is_lost(two_brokers):
    first, second = two_brokers.brokers
    topics = list(one_topic_per_bundle().values())
    client = pulsar.Client(two_brokers.service_url, operation_timeout_seconds=60)
    producers = [client.create_producer(t, batching_enabled=False, send_timeout_millis=60_000)
                 for t in topics]
    for topic, producer in zip(topics, producers, strict=True):
        for i in range(30):
            producer.send(b"%s-%d" % (topic.encode(), i))
    assert owned(second), "the second broker serves some bundles before it dies"

    second.kill()
    # The producers of the dead broker's topics reconnect once its session has expired and
    # the survivor has taken its bundles (ledgers fenced and recovered).
    for topic, producer in zip(topics, producers, strict=True):
        for i in range(30, 60):
            producer.send(b"%s-%d" % (topic.encode(), i))
    wait_until(lambda: len(owned(first)) == resources.DEFAULT_BUNDLES, 30, "survivor owns all")
    close_after_broker_death(client)

    client = pulsar.Client(first.service_url, operation_timeout_seconds=30)
    try:
        for topic in topics:
            reader = client.create_reader(topic, pulsar.MessageId.earliest)
            stored = [reader.read_next(10_000).data() for _ in range(60)]
            assert stored == [b"%s-%d" % (topic.encode(), i) for i in range(60)]
            assert not reader.has_message_available()
    finally:
        client.close()


def partitioned_topic_over_every_bundle(partitions: int) -> str:
    """A partitioned topic name whose partitions fall into every bundle of public/default."""
    policies = resources.default_policies()
    for index in range(10_000):
        parent = naming.TopicName.parse(f"persistent://public/default/parted-{index}")
        hit = {bundles.bundle_of(parent.partition(i), policies) for i in range(partitions)}
        if len(hit) == resources.DEFAULT_BUNDLES:
            return str(parent)
    raise AssertionError("no such name")


def http_call(method: str, url: str, body: object = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        return int(reply.status)


def test_admin_operations_on_a_partitioned_topic_reach_every_partitions_broker(two_brokers):
    first, second = two_brokers.brokers
    topic = partitioned_topic_over_every_bundle(6)
    path = topic.replace("persistent://", "persistent/")
    admin = f"{first.web_url}/admin/v2/{path}"
    assert http_call("PUT", f"{admin}/partitions", 6) == 204
    assert http_call("PUT", f"{admin}/subscription/audit", {"ledgerId": -1, "entryId": -1}) == 204
    client = pulsar.Client(two_brokers.service_url, operation_timeout_seconds=30)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(60):
            producer.send(b"m%d" % i, partition_key=str(i))
        producer.close()
    finally:
        client.close()
    assert owned(first) and owned(second), "the partitions are served by both brokers"

    assert get_json(f"{admin}/subscriptions") == ["audit"]
    stats = get_json(f"{admin}/partitioned-stats")
    assert isinstance(stats, dict)
    assert stats["msgInCounter"] == 60
    assert stats["subscriptions"]["audit"]["msgBacklog"] == 60
    assert len(stats["partitions"]) == 6
    internal = get_json(f"{admin}/partitioned-internalStats")
    assert isinstance(internal, dict) and len(internal["partitions"]) == 6

    assert http_call("POST", f"{admin}/subscription/audit/skip_all") == 204
    stats = get_json(f"{admin}/partitioned-stats")
    assert isinstance(stats, dict) and stats["subscriptions"]["audit"]["msgBacklog"] == 0
    assert http_call("DELETE", f"{admin}/subscription/audit") == 204
    assert get_json(f"{admin}/subscriptions") == []
    assert http_call("PUT", f"{admin}/unload") == 204

    # A namespace-wide operation on bundles nobody owns: each bundle's work is done by the
    # broker its topics get assigned to.
    assert http_call("PUT", f"{admin}/subscription/again", {"ledgerId": -1, "entryId": -1}) == 204
    namespace = f"{first.web_url}/admin/v2/namespaces/public/default"
    assert http_call("PUT", f"{namespace}/unload") == 204
    assert owned(first) == owned(second) == set()
    assert http_call("POST", f"{namespace}/clearBacklog/again") == 204
    assert owned(first) and owned(second)
    stats = get_json(f"{admin}/partitioned-stats")
    assert isinstance(stats, dict) and stats["subscriptions"]["again"]["msgBacklog"] == 0
