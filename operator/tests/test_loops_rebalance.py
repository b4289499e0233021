"""The operator's rebalancing loop against three real brokers that do not balance themselves
(loadBalancerEnabled=false, as the operator renders it): a busy namespace of 16 bundles on
one broker is split over loadBalancerNamespaceBundleMaxTopics and spread within the
threshold by the loop's unloads with a destination, while official clients keep producing
and consuming without an error or a loss; plus the pure parts (who balances, settings)."""

from __future__ import annotations

import asyncio
import importlib.util
import pathlib
import time
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pulsar
import pytest
from pulsar_broker import local_cluster
from pulsar_broker import testing as broker_testing
from pulsar_common.testing import wait_until
from pulsar_operator import cluster_reconcile
from pulsar_operator.loops import rebalance

HELPERS_PATH = (pathlib.Path(__file__).resolve().parents[2]
                / "services/broker/tests/loadbalance/test_rebalancing_cluster.py")


def _helpers() -> ModuleType:
    """The broker's own rebalancing e2e helpers (topics one per bundle, steady traffic)."""
    spec = importlib.util.spec_from_file_location("broker_rebalancing_helpers", HELPERS_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def broker_conf(body: dict[str, Any]) -> str:
    plan = cluster_reconcile.reconcile(body, {}, "2026-01-01T00:00:00Z")
    found = next(o for o in plan.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "c-broker")
    return str(found["data"]["broker.conf"])


def test_the_operator_balances_unless_the_spec_hands_it_to_the_brokers() -> None:
    body: dict[str, Any] = {"metadata": {"name": "c", "generation": 1}, "spec": {}}
    assert "loadBalancerEnabled=false\n" in broker_conf(body)
    assert rebalance.operator_balances({})
    body["spec"] = {"broker": {"config": {"loadBalancerEnabled": "true"}}}
    assert "loadBalancerEnabled=true\n" in broker_conf(body)
    assert "loadBalancerEnabled=false" not in broker_conf(body)
    assert not rebalance.operator_balances({"loadBalancerEnabled": "true"})


def test_the_planner_settings_come_from_the_rendered_broker_conf() -> None:
    conf = rebalance.broker_settings({"loadBalancerBrokerThresholdShedderPercentage": "25",
                                      "loadBalancerSheddingIntervalSeconds": "3", "clusterName": "c",
                                      "notABrokerKey": "x"})
    assert conf.load_balancer_broker_threshold_shedder_percentage == 25
    assert rebalance.interval_ms(conf) == 3000
    assert rebalance.interval_ms(rebalance.broker_settings({})) == 60_000


def overrides() -> dict[str, str]:
    helpers = _helpers()
    return {
            **helpers.WEIGHTS,
            "loadBalancerEnabled": "false",
            "loadBalancerOverrideBrokerNicSpeedGbps": str(helpers.NIC_GBPS),
            "loadBalancerReportUpdateMinIntervalMillis": "1000",
            "loadBalancerSheddingIntervalSeconds": "1",
            "loadBalancerBrokerThresholdShedderPercentage": str(int(helpers.THRESHOLD)),
            "loadBalancerBundleUnloadMinThroughputThreshold": "0.2",
            "loadBalancerMaxBundlesToUnloadPerCycle": "16",
            "loadBalancerNamespaceBundleMaxTopics": "1",
            "loadBalancerAutoUnloadSplitBundlesEnabled": "false",
            "defaultNamespaceBundleSplitAlgorithm": "topic_count_equally_divide",
    }


@pytest.fixture
def three_brokers(tmp_path: pathlib.Path) -> Iterator[local_cluster.LocalCluster]:
    cluster = local_cluster.LocalCluster(
        tmp_path / "cluster", bookies=2, brokers=3, ensemble=2, write_quorum=2, ack_quorum=2,
        journal_sync=False, broker_overrides=overrides())
    cluster.start()
    yield cluster
    cluster.stop()


async def _loop(brokers: list[str], conf: Any, stop: asyncio.Event, status: dict[str, Any],
                events: list[str]) -> None:
    """The operator's rebalancing step, as its resync timer calls it (every 0.5 s here)."""
    memory = rebalance.Memory()
    http = rebalance.HttpBrokers()
    try:
        while not stop.is_set():
            outcome = await rebalance.step(http, brokers, conf, memory, status, int(time.time() * 1000))
            if outcome is not None:
                status.clear()
                status.update(outcome.status)
                events += [e.reason for e in outcome.events]
            await asyncio.sleep(0.5)
    finally:
        await http.close()


@pytest.mark.slow
async def test_the_loop_splits_and_spreads_a_busy_namespace_without_losing_a_message(
        three_brokers: local_cluster.LocalCluster) -> None:
    helpers = _helpers()
    cluster = three_brokers
    first = cluster.brokers[0]
    helpers.put(f"{first.web_url}/admin/v2/namespaces/{helpers.NAMESPACE}", {"bundles": {"numBundles": 16}})
    topics = helpers.topic_per_bundle()
    for topic in topics:
        path = topic.replace("persistent://", "persistent/")
        broker_testing.get_json(f"{first.web_url}/lookup/v2/topic/{path}?authoritative=true")
    assert len(helpers.busy_bundles(first)) == 16
    conf = rebalance.broker_settings(overrides())
    ids = [broker_testing.broker_id(b) for b in cluster.brokers]
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    stop, status, events = asyncio.Event(), {}, []  # type: ignore[var-annotated]
    loop = asyncio.create_task(_loop(ids, conf, stop, status, events))
    try:
        traffic = helpers.Traffic(client, topics)
        traffic.start()
        started = time.monotonic()

        def balanced() -> bool:
            highest, average = helpers.usage_spread(cluster)
            return status.get("unloads", 0) > 0 and highest <= average + helpers.THRESHOLD

        await asyncio.to_thread(wait_until, balanced, 60, "the operator's loop balances the brokers")
        elapsed = time.monotonic() - started
        traffic.stop()
        await asyncio.to_thread(wait_until, lambda: traffic.received >= traffic.sent, 30, "every message received")
    finally:
        stop.set()
        await loop
        client.close()
    assert "BundleSplit" in events and "BundleUnloaded" in events, events
    assert status["splits"] >= 1 and status["unloads"] >= 1
    assert traffic.errors == []
    assert all(helpers.busy_bundles(b) for b in cluster.brokers)
    print(f"\nOPERATOR REBALANCE: balanced {elapsed:.1f} s after traffic started, "
          f"{status['splits']} splits, {status['unloads']} unloads in {status['rounds']} rounds")
