"""What the e2e tests of the operator's live cluster share (test_operator_live_*.py,
test_operator_loops_live.py): the marks that skip them where the kubelet harness cannot
run, the custom resources they name, the checks of a resource's conditions, and the
module's live cluster (API emulator, operator process, kubelet harness) with the ways a
user reaches the Pulsar cluster in it: the official client and pulsar-admin, each run as
a pod would, resolving the cluster's names."""

from __future__ import annotations

import contextlib
import json
import pathlib
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

import pytest
from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api, harness
from pulsar_operator.kubelet_emulation import live as live_env

MARKS = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which(emulation.KUBECTL), reason="kubectl is not installed"),
    pytest.mark.skipif(not shutil.which("etcd"), reason="etcd is not installed"),
    pytest.mark.skipif(harness.unavailable_reason() is not None, reason=str(harness.unavailable_reason())),
]
NS = "default"
#: How long a PulsarCluster may take from `kubectl apply` to Ready.
READY_TIMEOUT_S = 150.0
GROUP = "pulsar.pulsar-py.dev/v1alpha1"
CLUSTERS = api.Resource(GROUP, "pulsarclusters", "PulsarCluster")
FUNCTIONS = api.Resource(GROUP, "functions", "Function")
MESH_FUNCTIONS = api.Resource("compute.functionmesh.io/v1alpha1", "functions", "Function")
PULSAR_ADMIN = str(pathlib.Path(sys.executable).with_name("pulsar-admin"))
#: Publishes N messages to a function's input and reads what it puts on its output: each body
#: with the function's suffix. Arguments: url, source, sink, suffix, count, subscription and
#: the subscription's initial position (Earliest or Latest).
THROUGH_FUNCTION = """
import sys, pulsar
url, source, sink, suffix, count, subscription, position = sys.argv[1:8]
client = pulsar.Client(url, operation_timeout_seconds=45)
consumer = client.subscribe(sink, subscription, initial_position=getattr(pulsar.InitialPosition, position))
producer = client.create_producer(source)
sent = [f"{source}-{i}" for i in range(int(count))]
for body in sent:
    producer.send(body.encode())
got = []
while len(got) < len(sent):
    message = consumer.receive(timeout_millis=60000)
    consumer.acknowledge(message)
    got.append(message.data().decode())
client.close()
wanted = sorted(body + suffix for body in sent)
print("THROUGH " + ("ok" if sorted(got) == wanted else f"mismatch {sorted(got)} != {wanted}"))
"""


def packages_cluster(name: str, **spec: Any) -> str:
    """A small PulsarCluster for functions, as JSON for `kubectl apply -f -`: 1 etcd, 2 bookies,
    1 broker with packages management, no proxy; spec adds fields or replaces them."""
    return json.dumps({"apiVersion": GROUP, "kind": "PulsarCluster", "metadata": {"name": name}, "spec": {
        "etcd": {"replicas": 1}, "bookkeeper": {"replicas": 2},
        "broker": {"replicas": 1, "config": {"enablePackagesManagement": "true"}},
        "proxy": {"enabled": False}, **spec}})


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def is_ready(obj: dict[str, Any]) -> bool:
    return condition(obj, "Ready").get("status") == "True"


def ready_with(replicas: int, *, observed: bool = False) -> Callable[[dict[str, Any]], bool]:
    """Ready with that many replicas, all ready; with observed, also for the object's latest generation."""
    def check(obj: dict[str, Any]) -> bool:
        status = obj.get("status") or {}
        return (is_ready(obj) and status.get("readyReplicas") == replicas and status.get("replicas") == replicas
                and (not observed or status.get("observedGeneration") == obj["metadata"].get("generation")))
    return check


class Live(live_env.LiveCluster):
    async def client_script(self, cluster: str, script: str, *args: str,
                            timeout_s: float = 150) -> subprocess.CompletedProcess[str]:
        """A Python script (with the official client) run as a pod would; its first argument
        is the PulsarCluster's status.brokerServiceURL."""
        url = (await self.status(CLUSTERS, cluster))["brokerServiceURL"]
        return await self.cluster.run([sys.executable, "-c", script, url, *args], timeout_s=timeout_s)

    async def assert_through(self, cluster: str, source: str, sink: str, suffix: str, count: int,
                             subscription: str = "e2e-check", position: str = "Earliest") -> None:
        """What count messages published to source become on sink: each with the suffix."""
        result = await self.client_script(cluster, THROUGH_FUNCTION, source, sink, suffix, str(count),
                                          subscription, position)
        assert "THROUGH ok" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]

    async def admin_ok(self, cluster: str, *args: str, timeout_s: float = 90) -> str:
        """pulsar-admin through the PulsarCluster's status.webServiceURL; its output, once it succeeded."""
        url = (await self.status(CLUSTERS, cluster))["webServiceURL"]
        result = await self.cluster.run([PULSAR_ADMIN, "--admin-url", url, *args], timeout_s=timeout_s)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        return result.stdout

    def running_pods(self, prefix: str) -> set[str]:
        """Pods of that name prefix whose processes run (terminating ones included)."""
        assert self.cluster.kubelet is not None
        return {runner.name for runner in self.cluster.kubelet.live if runner.name.startswith(prefix)}


LiveT = TypeVar("LiveT", bound=live_env.LiveCluster)


@contextlib.asynccontextmanager
async def started(kind: type[LiveT], state: pathlib.Path, request: pytest.FixtureRequest,
                  log_chars: int = 6000) -> AsyncIterator[LiveT]:
    """The module's live cluster, watching NS; the pods' and the operator's logs are printed
    at teardown when a test of the session failed meanwhile."""
    failed_before = request.session.testsfailed
    async with live_env.running(state, NS, lambda: request.session.testsfailed > failed_before,
                                log_chars) as running:
        yield kind(running.kubeconfig, running.api, running.cluster, running.operator, NS)
