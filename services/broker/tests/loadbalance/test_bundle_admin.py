"""Bundle split and the load report over the admin API of the session's standalone, with the
official client producing through a split."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_broker.namespace import bundles
from pulsar_client_tools.admin import main as admin
from pulsar_common import naming
from pulsar_common.testing import wait_until


def put(web_url: str, path: str, body: Any = None) -> int:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(web_url + path, data=data, method="PUT",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.fixture
def namespace(standalone: broker_testing.StandaloneProcess) -> str:
    name = f"public/lb-{uuid.uuid4().hex[:8]}"
    assert put(standalone.web_url, f"/admin/v2/namespaces/{name}",
               {"bundles": {"numBundles": 1}}) == 204
    return name


def boundaries(web_url: str, namespace: str) -> list[str]:
    return list(broker_testing.get_json(f"{web_url}/admin/v2/namespaces/{namespace}/bundles")
                ["boundaries"])


def test_topic_count_split_puts_half_the_topics_in_each_half_and_clients_keep_going(
        standalone: broker_testing.StandaloneProcess, client: pulsar.Client,
        namespace: str) -> None:
    topics = [f"persistent://{namespace}/t-{i}" for i in range(6)]
    producers = [client.create_producer(t, batching_enabled=False) for t in topics]
    consumers = [client.subscribe(t, "s") for t in topics]
    for producer in producers:
        producer.send(b"before")

    status = put(standalone.web_url, f"/admin/v2/namespaces/{namespace}/0x00000000_0xffffffff"
                 "/split?unload=true&splitAlgorithmName=topic_count_equally_divide")
    assert status == 204
    edges = boundaries(standalone.web_url, namespace)
    assert len(edges) == 3 and edges[0] == "0x00000000" and edges[-1] == "0xffffffff"
    point = int(edges[1], 16)
    hashes = [bundles.topic_hash(naming.TopicName.parse(t)) for t in topics]
    assert sum(h < point for h in hashes) == 3

    for producer in producers:
        producer.send(b"after")
    for consumer in consumers:
        assert [consumer.receive(10_000).data() for _ in range(2)] == [b"before", b"after"]
    owned = broker_testing.owned(standalone, "standalone")
    assert f"{namespace}/0x00000000_{edges[1]}" in owned
    assert f"{namespace}/{edges[1]}_0xffffffff" in owned


def test_range_split_without_unload_keeps_the_halves_on_the_owner(
        standalone: broker_testing.StandaloneProcess, client: pulsar.Client,
        namespace: str) -> None:
    producer = client.create_producer(f"persistent://{namespace}/only", batching_enabled=False)
    producer.send(b"x")
    assert put(standalone.web_url,
               f"/admin/v2/namespaces/{namespace}/0x00000000_0xffffffff/split") == 204
    assert boundaries(standalone.web_url, namespace) == ["0x00000000", "0x7fffffff", "0xffffffff"]
    owned = broker_testing.owned(standalone, "standalone")
    assert {f"{namespace}/0x00000000_0x7fffffff", f"{namespace}/0x7fffffff_0xffffffff"} <= owned
    assert f"{namespace}/0x00000000_0xffffffff" not in owned
    producer.send(b"still served")


def test_splits_that_cannot_happen_are_refused(
        standalone: broker_testing.StandaloneProcess, namespace: str) -> None:
    whole = f"/admin/v2/namespaces/{namespace}/0x00000000_0xffffffff/split"
    assert put(standalone.web_url, whole + "?splitAlgorithmName=specified_positions_divide") == 412
    # No topics: nothing to divide by count.
    assert put(standalone.web_url, whole + "?splitAlgorithmName=topic_count_equally_divide") == 412
    assert put(standalone.web_url,
               f"/admin/v2/namespaces/{namespace}/0x00000000_0x00001000/split") == 404


def test_unload_to_a_broker_that_is_not_live_is_refused(
        standalone: broker_testing.StandaloneProcess, namespace: str) -> None:
    path = (f"/admin/v2/namespaces/{namespace}/0x00000000_0xffffffff/unload"
            "?destinationBroker=10.9.9.9:8080")
    assert put(standalone.web_url, path) == 412


def test_the_load_report_shows_this_broker_and_its_busy_bundle(
        standalone: broker_testing.StandaloneProcess, client: pulsar.Client,
        namespace: str) -> None:
    producer = client.create_producer(f"persistent://{namespace}/busy", batching_enabled=False)
    consumer = client.subscribe(f"persistent://{namespace}/busy", "s")
    bundle = f"{namespace}/0x00000000_0xffffffff"
    url = f"{standalone.web_url}/admin/v2/broker-stats/load-report"

    def reported() -> bool:
        producer.send(b"x" * 1000)
        consumer.acknowledge(consumer.receive(10_000))
        stats = broker_testing.get_json(url)["lastStats"].get(bundle)
        return bool(stats and stats["msgRateIn"] > 0 and stats["producerCount"] == 1)

    wait_until(reported, 30, "the bundle's rates in the load report")
    report = broker_testing.get_json(url)
    assert report["loadReportType"] == "LocalBrokerData"
    assert report["webServiceUrl"] == standalone.web_url
    assert bundle in report["bundles"]
    assert report["lastStats"][bundle]["consumerCount"] == 1
    assert report["lastStats"][bundle]["topics"] == 1
    for resource in ("cpu", "memory", "directMemory", "bandwidthIn", "bandwidthOut"):
        assert set(report[resource]) == {"usage", "limit"}
    assert report["memory"]["usage"] > 0 and report["cpu"]["limit"] >= 100
    assert report["numBundles"] == len(report["bundles"])


def test_pulsar_admin_splits_unloads_to_a_destination_and_dumps_the_load_report(
        standalone: broker_testing.StandaloneProcess, namespace: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    url = ["--admin-url", standalone.web_url]
    assert admin.main([*url, "namespaces", "split-bundle", namespace, "-b",
                       "0x00000000_0xffffffff", "-san", "range_equally_divide"]) == 0
    assert boundaries(standalone.web_url, namespace) == ["0x00000000", "0x7fffffff", "0xffffffff"]
    me = broker_testing.broker_id(standalone)
    assert admin.main([*url, "namespaces", "unload", namespace, "-b", "0x00000000_0x7fffffff",
                       "--destinationBroker", me]) == 0
    assert admin.main([*url, "namespaces", "unload", namespace, "-b", "0x00000000_0x7fffffff",
                       "-d", "10.9.9.9:1"]) == 1
    capsys.readouterr()
    assert admin.main([*url, "broker-stats", "load-report"]) == 0
    assert json.loads(capsys.readouterr().out)["loadReportType"] == "LocalBrokerData"


def test_specified_positions_cut_a_bundle_into_several(
        standalone: broker_testing.StandaloneProcess, client: pulsar.Client,
        namespace: str) -> None:
    producer = client.create_producer(f"persistent://{namespace}/p", batching_enabled=False)
    producer.send(b"x")
    whole = (f"/admin/v2/namespaces/{namespace}/0x00000000_0xffffffff/split"
             "?splitAlgorithmName=specified_positions_divide")
    assert put(standalone.web_url, whole, ["0x10"]) == 400
    assert put(standalone.web_url, whole, [0, 2**40]) == 412  # none strictly inside
    assert put(standalone.web_url, whole, [0x30000000, 0x10000000, 2**40]) == 204
    assert boundaries(standalone.web_url, namespace) == [
        "0x00000000", "0x10000000", "0x30000000", "0xffffffff"]
    assert sum(b.startswith(namespace + "/") for b in broker_testing.owned(
        standalone, "standalone")) == 3
    producer.send(b"still served")
    assert admin.main(["--admin-url", standalone.web_url, "namespaces", "split-bundle", namespace,
                       "-b", "0x30000000_0xffffffff", "-san", "specified_positions_divide",
                       "-sb", "0x40000000,0x50000000"]) == 0
    assert boundaries(standalone.web_url, namespace)[3:5] == ["0x40000000", "0x50000000"]
