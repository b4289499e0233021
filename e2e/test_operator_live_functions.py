"""e2e: Function resources become instances that really run, on the operator's live cluster.

The API emulator, the operator process and the kubelet harness make one
"Kubernetes cluster" on this machine (see test_operator_live_cluster.py). A user
applies examples/pulsar-cluster.yaml and examples/function.yaml unchanged, and
function-mesh's own Python sample; what is published to a function's input comes
out transformed on its output; `kubectl scale` changes the number of instance
processes; deleting the Functions stops them.

function-mesh's sample (FUNCTION_MESH_SAMPLE) is applied as its repository has it,
but for its `image`: StreamNative's runner image has no `pulsar function-instance`,
so the operator's own image (which has the file the sample names) runs it instead.
The harness runs no images, so the one file that image has for the sample,
/pulsar/examples/python-examples/exclamation_function.py, is put on this machine
for the test (a link to the module the image links there) and removed afterwards.
The sample's pulsar.pulsarConfig names the brokers of its own test cluster,
sn-platform-pulsar-broker; the test gives pulsar-mini's brokers that Service name too.

Last, the cluster gets a functions worker (`kubectl patch` of spec.functionsWorker):
`pulsar-admin functions create` through the brokers' Service (status.webServiceURL)
reaches the worker pod, whose instance process transforms what is published, also
after the worker pod is SIGKILLed and restarted in place.
"""

from __future__ import annotations

import contextlib
import json
import pathlib
import re
import shutil
import signal
import urllib.request
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pulsar_functions.examples.exclamation_function as example_function
import pytest
import pytest_asyncio
import yaml
from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api

from e2e import operator_live
from e2e.operator_live import (
    CLUSTERS,
    MESH_FUNCTIONS,
    NS,
    PULSAR_ADMIN,
    READY_TIMEOUT_S,
    is_ready,
    ready_with,
)

REPO = pathlib.Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"
pytestmark = operator_live.MARKS
CLUSTER = "pulsar-mini"
WAIT_S = 90.0
MESH_KIND = "functions.compute.functionmesh.io"
WORKER_PODS = f"{CLUSTER}-functions-worker-"
#: Where the pulsar-py image has the example function function-mesh's sample names.
IMAGE_EXAMPLE = pathlib.Path("/pulsar/examples/python-examples/exclamation_function.py")
#: github.com/streamnative/function-mesh, .ci/tests/integration/cases/python-function/manifests.yaml
#: (commit 1f1a5d2f), without its `image: streamnative/pulsar-functions-python-sample:3.2.2.1` line
#: and its one comment line.
FUNCTION_MESH_SAMPLE = """
apiVersion: compute.functionmesh.io/v1alpha1
kind: Function
metadata:
  name: py-function-sample
  namespace: default
spec:
  className: exclamation_function.ExclamationFunction
  forwardSourceMessageProperty: true
  maxPendingAsyncRequests: 1000
  replicas: 3
  logTopic: persistent://public/default/py-function-logs
  input:
    topics:
    - persistent://public/default/input-python-topic
  output:
    topic: persistent://public/default/output-python-topic
  resources:
    requests:
      cpu: 50m
      memory: 1G
    limits:
      cpu: "0.2"
      memory: 1.1G
  secretsMap:
    "name":
      path: "test-py-secret"
      key: "username"
    "pwd":
      path: "test-py-secret"
      key: "password"
  pulsar:
    pulsarConfig: "test-py-pulsar"
  python:
    py: /pulsar/examples/python-examples/exclamation_function.py
  clusterName: test
  autoAck: true
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: test-py-pulsar
data:
  webServiceURL: http://sn-platform-pulsar-broker.default.svc.cluster.local:8080
  brokerServiceURL: pulsar://sn-platform-pulsar-broker.default.svc.cluster.local:6650
---
apiVersion: v1
data:
  username: YWRtaW4=
  password: MWYyZDFlMmU2N2Rm
kind: Secret
metadata:
  name: test-py-secret
type: Opaque
"""
#: The sample's cluster: a Service of that name in front of pulsar-mini's brokers.
SAMPLE_BROKERS = f"""
apiVersion: v1
kind: Service
metadata:
  name: sn-platform-pulsar-broker
spec:
  selector:
    app.kubernetes.io/name: pulsar
    app.kubernetes.io/instance: {CLUSTER}
    app.kubernetes.io/component: broker
  ports:
  - name: pulsar
    port: 6650
    targetPort: 6650
  - name: http
    port: 8080
    targetPort: 8080
"""


class Live(operator_live.Live):
    async def through_function(self, source: str, sink: str, count: int = 10) -> None:
        """The example function's "!" on what it reads."""
        await self.assert_through(CLUSTER, source, sink, "!", count)


def stats(live: Live, pod: str) -> dict[str, Any]:
    """The instance's /stats, from its pod address."""
    with urllib.request.urlopen(f"http://{live.cluster.pod_ip(pod)}:9094/stats", timeout=5) as reply:
        return dict(json.loads(reply.read()))


def instance_id(live: Live, pod: str) -> int:
    """The instance_id label of the instance's /metrics (the pod's ordinal)."""
    with urllib.request.urlopen(f"http://{live.cluster.pod_ip(pod)}:9094/metrics", timeout=5) as reply:
        text = reply.read().decode()
    ids = set(re.findall(r'instance_id="(\d+)"', text))
    assert len(ids) == 1, text[:2000]
    return int(ids.pop())


@pytest.fixture(scope="module")
def image_example() -> Iterator[None]:
    """The file the pulsar-py image has at /pulsar/examples/python-examples (the harness runs no images)."""
    created = [p for p in (IMAGE_EXAMPLE.parents[2], IMAGE_EXAMPLE.parents[1], IMAGE_EXAMPLE.parent)
               if not p.exists()]
    linked = not IMAGE_EXAMPLE.exists() and not IMAGE_EXAMPLE.is_symlink()
    if linked:
        IMAGE_EXAMPLE.parent.mkdir(parents=True, exist_ok=True)
        IMAGE_EXAMPLE.symlink_to(pathlib.Path(str(example_function.__file__)))
    try:
        yield
    finally:
        if linked:
            IMAGE_EXAMPLE.unlink(missing_ok=True)
        if IMAGE_EXAMPLE.parent in created:  # the instances' bytecode of the example went there too
            shutil.rmtree(IMAGE_EXAMPLE.parent / "__pycache__", ignore_errors=True)
        for directory in reversed(created):
            with contextlib.suppress(OSError):
                directory.rmdir()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest,
               image_example: None) -> AsyncIterator[Live]:
    async with operator_live.started(Live, tmp_path_factory.mktemp("live-functions"), request, 4000) as running:
        yield running


async def test_the_example_function_transforms_what_is_published_to_its_input(live: Live) -> None:
    await live.kubectl("apply", "--validate=false", "-f", str(emulation.CRD_DIR))
    await live.kubectl("apply", "--validate=false", "-f", str(EXAMPLES / "pulsar-cluster.yaml"))
    await live.wait(CLUSTERS, CLUSTER, is_ready, "PulsarCluster Ready=True", READY_TIMEOUT_S)
    await live.kubectl("apply", "--validate=false", "-f", str(EXAMPLES / "function.yaml"))
    function = await live.wait(MESH_FUNCTIONS, "exclamation", ready_with(1), "example Function Ready 1/1")
    assert "ignoredFields" not in function["status"]
    assert live.running_pods("exclamation-function-") == {"exclamation-function-0"}
    await live.through_function("persistent://public/default/in", "persistent://public/default/out")
    assert stats(live, "exclamation-function-0")["numSuccessfullyProcessed"] >= 10


async def test_the_hpa_scales_the_function_on_the_instances_cpu(live: Live) -> None:
    hpa = await live.api.get(api.AUTOSCALERS, NS, "exclamation-function")
    assert hpa is not None
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "compute.functionmesh.io/v1alpha1", "kind": "Function",
                                             "name": "exclamation"}
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (1, 3)
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    function = await live.api.get(MESH_FUNCTIONS, NS, "exclamation")
    pods = [p for p in live.cluster.caches[api.PODS].items()
            if all(p["metadata"]["labels"].get(k) == v for k, v in (
                pair.split("=") for pair in (function or {})["status"]["selector"].split(",")))]
    assert [p["metadata"]["name"] for p in pods] == ["exclamation-function-0"]


async def test_function_mesh_s_python_sample_runs_three_instances(live: Live) -> None:
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=SAMPLE_BROKERS)
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=FUNCTION_MESH_SAMPLE)
    function = await live.wait(MESH_FUNCTIONS, "py-function-sample", ready_with(3), "sample Function Ready 3/3")
    assert [f["field"] for f in function["status"]["ignoredFields"]] == ["spec.maxPendingAsyncRequests"]
    pods = {f"py-function-sample-function-{i}" for i in range(3)}
    assert live.running_pods("py-function-sample-function-") == pods
    assert {instance_id(live, pod) for pod in sorted(pods)} == {0, 1, 2}
    await live.through_function("persistent://public/default/input-python-topic",
                                "persistent://public/default/output-python-topic", count=30)


async def test_kubectl_scale_starts_and_stops_instances(live: Live) -> None:
    await live.kubectl("scale", f"{MESH_KIND}/exclamation", "--replicas=2")
    await live.wait(MESH_FUNCTIONS, "exclamation", ready_with(2), "example Function Ready 2/2")
    assert live.running_pods("exclamation-function-") == {"exclamation-function-0", "exclamation-function-1"}
    assert instance_id(live, "exclamation-function-1") == 1
    await live.kubectl("scale", f"{MESH_KIND}/exclamation", "--replicas=1")
    await live.wait(MESH_FUNCTIONS, "exclamation", ready_with(1), "example Function back to 1/1")
    await emulation.wait_for(lambda: live.running_pods("exclamation-function-") == {"exclamation-function-0"},
                             WAIT_S, "exclamation-function-1 stopped")
    await live.through_function("persistent://public/default/in", "persistent://public/default/out", count=5)


async def test_deleting_the_functions_stops_their_instances_and_removes_their_children(live: Live) -> None:
    await live.kubectl("delete", f"{MESH_KIND}/exclamation", f"{MESH_KIND}/py-function-sample", "--wait=false")
    await emulation.wait_for(lambda: not live.running_pods("exclamation-function-")
                             and not live.running_pods("py-function-sample-function-"),
                             WAIT_S, "every instance process stopped")
    for resource in (api.STATEFUL_SETS, api.SERVICES, api.CONFIG_MAPS, api.AUTOSCALERS, api.PODS):
        items, _ = await live.api.list(resource)
        left = [i["metadata"]["name"] for i in items if i["metadata"]["name"].endswith("-function")
                or "-function-" in i["metadata"]["name"]]
        assert left == [], resource.plural
    cluster = await live.api.get(CLUSTERS, NS, CLUSTER)
    assert is_ready(cluster or {})


async def test_the_sample_is_function_mesh_s_own_but_for_its_image() -> None:
    function = next(doc for doc in yaml.safe_load_all(FUNCTION_MESH_SAMPLE) if doc["kind"] == "Function")
    assert "image" not in function["spec"] and function["spec"]["python"]["py"] == str(IMAGE_EXAMPLE)


def worker_ready(obj: dict[str, Any]) -> bool:
    worker = ((obj.get("status") or {}).get("components") or {}).get("functionsWorker") or {}
    return is_ready(obj) and worker.get("readyReplicas") == 1


async def test_a_functions_worker_in_the_cluster_runs_functions_created_through_the_brokers(
        live: Live) -> None:
    await live.kubectl("patch", f"pulsarclusters.pulsar.pulsar-py.dev/{CLUSTER}", "--type=merge",
                       "-p", json.dumps({"spec": {"functionsWorker": {"enabled": True}}}))
    await live.wait(CLUSTERS, CLUSTER, worker_ready, "PulsarCluster Ready with 1 functions worker", READY_TIMEOUT_S)
    assert live.running_pods(WORKER_PODS) == {f"{CLUSTER}-functions-worker-0"}
    admin_url = (await live.status(CLUSTERS, CLUSTER))["webServiceURL"]  # the brokers' Service

    async def admin(*args: str) -> str:
        return await live.admin_ok(CLUSTER, "functions", *args)

    created = await admin("create", "--py", str(example_function.__file__),
                          "--classname", "exclamation_function.ExclamationFunction",
                          "--inputs", "persistent://public/default/worker-in",
                          "--output", "persistent://public/default/worker-out", "--name", "via-worker")
    assert "Created successfully" in created

    async def running() -> bool:
        result = await live.cluster.run([PULSAR_ADMIN, "--admin-url", admin_url, "functions", "status",
                                         "--name", "via-worker"], timeout_s=30)
        return result.returncode == 0 and json.loads(result.stdout).get("numRunning") == 1

    await emulation.wait_for(running, WAIT_S, "the function's instance running on the worker")
    status = json.loads(await admin("status", "--name", "via-worker"))
    assert status["instances"][0]["status"]["workerId"] == f"{CLUSTER}-functions-worker-0"
    await live.through_function("persistent://public/default/worker-in", "persistent://public/default/worker-out")
    assert "via-worker" in (await admin("list")).split()
    # A node failure: the worker and its instance die; the kubelet restarts the worker in place,
    # which finds its function in the metadata store and runs it again.
    live.cluster.kill_pod(f"{CLUSTER}-functions-worker-0", NS, signal.SIGKILL)

    async def restarted() -> bool:
        pod = await live.api.get(api.PODS, NS, f"{CLUSTER}-functions-worker-0") or {}
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        return int(statuses[0].get("restartCount") or 0) >= 1

    await emulation.wait_for(restarted, WAIT_S, "the worker container restarted")
    await live.through_function("persistent://public/default/worker-in", "persistent://public/default/worker-out",
                                count=5)
    assert "Deleted successfully" in await admin("delete", "--name", "via-worker")
