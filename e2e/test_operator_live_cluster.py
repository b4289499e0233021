"""e2e: the operator runs a real Pulsar cluster, driven only the way a user drives it.

The API emulator (pulsar_operator.emulation), the operator process and the kubelet
harness (pulsar_operator.kubelet_emulation) make one "Kubernetes cluster" on this
machine: the pods the operator asks for run as local processes, each on its own
loopback address, resolving the cluster DNS names. The tests run in order, as a user
would: `kubectl apply` the CRDs and examples/pulsar-cluster.yaml unchanged, wait for
Ready, produce and consume with the official client through status.brokerServiceURL,
use pulsar-admin through status.webServiceURL, apply a Tenant and a PulsarNamespace,
lose a broker pod, and delete the cluster. Clients and the operator run under
`Harness.wrap`, so they resolve the cluster's names as a pod would.
"""

from __future__ import annotations

import json
import pathlib
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api

from e2e import operator_live
from e2e.operator_live import CLUSTERS, NS, READY_TIMEOUT_S, condition, is_ready

REPO = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
pytestmark = operator_live.MARKS
CLUSTER = "pulsar-mini"
WAIT_S = 60.0
TENANTS = api.Resource(operator_live.GROUP, "tenants", "Tenant")
NAMESPACES = api.Resource(operator_live.GROUP, "pulsarnamespaces", "PulsarNamespace")
#: Produces N messages to a topic and consumes them back with the official client.
ROUND_TRIP = """
import sys, pulsar
url, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
client = pulsar.Client(url, operation_timeout_seconds=45)
consumer = client.subscribe(topic, "e2e", initial_position=pulsar.InitialPosition.Earliest)
producer = client.create_producer(topic)
sent = [f"{topic}-{i}" for i in range(count)]
for body in sent:
    producer.send(body.encode())
got = []
while len(got) < count:
    message = consumer.receive(timeout_millis=45000)
    consumer.acknowledge(message)
    got.append(message.data().decode())
client.close()
print("ROUND-TRIP " + ("ok" if sorted(got) == sorted(sent) else f"mismatch {got}"))
"""


class Live(operator_live.Live):
    async def cluster_status(self) -> dict[str, Any]:
        return await self.status(CLUSTERS, CLUSTER)

    async def gone(self, resource: api.Resource, name: str) -> None:
        async def absent() -> bool:
            return await self.api.get(resource, NS, name) is None

        await emulation.wait_for(absent, WAIT_S, f"{resource.kind} {name} deleted")

    async def round_trip(self, topic: str, count: int = 20) -> None:
        result = await self.client_script(CLUSTER, ROUND_TRIP, topic, str(count))
        assert "ROUND-TRIP ok" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]

    async def admin(self, *args: str) -> str:
        return await self.admin_ok(CLUSTER, *args, timeout_s=60)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[Live]:
    async with operator_live.started(Live, tmp_path_factory.mktemp("live-cluster"), request) as running:
        yield running


async def test_the_example_cluster_becomes_ready_with_every_pod_running(live: Live) -> None:
    await live.kubectl("apply", "--validate=false", "-f", str(emulation.CRD_DIR))
    await live.kubectl("apply", "--validate=false", "-f", str(EXAMPLES / "pulsar-cluster.yaml"))
    cluster = await live.wait(CLUSTERS, CLUSTER, is_ready, "PulsarCluster Ready=True", READY_TIMEOUT_S)
    assert cluster["status"]["metadataInitialized"] is True
    components = cluster["status"]["components"]
    assert {k: v["readyReplicas"] for k, v in components.items() if v} == {
        "etcd": 1, "bookkeeper": 3, "broker": 2, "proxy": 1}
    pods = live.cluster.caches[api.PODS].items()
    assert len({p["status"]["podIP"] for p in pods}) == len(pods) == 7


async def test_the_official_client_produces_and_consumes_through_the_status_url(live: Live) -> None:
    assert (await live.cluster_status())["brokerServiceURL"] == f"pulsar://{CLUSTER}-proxy.{NS}.svc:6650"
    await live.round_trip("persistent://public/default/first")


async def test_pulsar_admin_works_through_the_status_admin_url(live: Live) -> None:
    assert CLUSTER in await live.admin("clusters", "list")
    assert "public" in await live.admin("tenants", "list")
    brokers = await live.admin("brokers", "list", CLUSTER)
    assert f"{CLUSTER}-broker-0.{CLUSTER}-broker-headless.{NS}.svc" in brokers
    assert f"{CLUSTER}-broker-1.{CLUSTER}-broker-headless.{NS}.svc" in brokers


async def test_tenant_and_namespace_resources_appear_in_the_running_cluster(live: Live) -> None:
    await live.kubectl("apply", "--validate=false", "-f", str(EXAMPLES / "tenant.yaml"),
                       "-f", str(EXAMPLES / "namespace.yaml"))
    await live.wait(TENANTS, "acme", is_ready, "Tenant Ready")
    await live.wait(NAMESPACES, "acme-orders", is_ready, "PulsarNamespace Ready")
    assert "acme/orders" in await live.admin("namespaces", "list", "acme")
    retention = json.loads(await live.admin("namespaces", "get-retention", "acme/orders"))
    assert retention == {"retentionTimeInMinutes": 1440, "retentionSizeInMB": 1024}
    await live.round_trip("persistent://acme/orders/created", count=5)


async def test_a_deleted_broker_pod_leaves_the_cluster_serving_and_comes_back(live: Live) -> None:
    old = await live.api.get(api.PODS, NS, f"{CLUSTER}-broker-0")
    assert old is not None
    await live.kubectl("delete", "pod", f"{CLUSTER}-broker-0")
    await live.round_trip("persistent://public/default/after-broker-loss")
    await live.wait(api.PODS, f"{CLUSTER}-broker-0",
                    lambda p: p["metadata"]["uid"] != old["metadata"]["uid"] and condition(p, "Ready").get("status")
                    == "True", "broker-0 replaced and ready")
    await live.round_trip("persistent://public/default/first", count=5)


async def test_a_bookie_killed_like_a_failed_node_restarts_and_the_cluster_keeps_serving(live: Live) -> None:
    live.cluster.kill_pod(f"{CLUSTER}-bookie-2", signum=signal.SIGKILL)
    await live.round_trip("persistent://public/default/after-bookie-loss")

    def restarted(pod: dict[str, Any]) -> bool:
        container = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]
        return container.get("restartCount", 0) >= 1 and container.get("ready") is True

    await live.wait(api.PODS, f"{CLUSTER}-bookie-2", restarted, "bookie-2 restarted and ready")


async def test_deleting_the_cluster_stops_its_pods_removes_its_children_and_keeps_its_volumes(live: Live) -> None:
    # Pulsar refuses to delete a namespace that still has topics, so the user deletes them first.
    await live.admin("topics", "delete", "-f", "persistent://acme/orders/created")
    # --wait=false: kubectl's wait for a finalized object does not see the emulator's deletion.
    await live.kubectl("delete", "pulsarnamespace", "acme-orders", "--wait=false")
    await live.kubectl("delete", "tenant", "acme", "--wait=false")
    await live.gone(NAMESPACES, "acme-orders")
    await live.gone(TENANTS, "acme")
    assert "acme" not in await live.admin("tenants", "list")
    claims = {c["metadata"]["name"] for c in live.cluster.caches[api.CLAIMS].items()}
    await live.kubectl("delete", "pulsarcluster", CLUSTER, "--wait=false")
    await live.gone(CLUSTERS, CLUSTER)
    await emulation.wait_for(lambda: not live.cluster.caches[api.PODS].items() and not live.cluster.kubelet.live,
                             WAIT_S, "every pod stopped")
    for resource in (api.STATEFUL_SETS, api.SERVICES, api.CONFIG_MAPS, api.DISRUPTION_BUDGETS):
        items, _ = await live.api.list(resource)
        assert [i["metadata"]["name"] for i in items if i["metadata"]["name"].startswith(CLUSTER)] == []
    # No PVC retention policy is set, so the StatefulSets' default (Retain) keeps the data.
    assert {c["metadata"]["name"] for c in (await live.api.list(api.CLAIMS))[0]} == claims
    assert {f"data-{CLUSTER}-etcd-0", f"journal-{CLUSTER}-bookie-0", f"ledgers-{CLUSTER}-bookie-2"} <= claims
    assert all((live.cluster.kubelet.claims.path(NS, name)).is_dir() for name in claims)
