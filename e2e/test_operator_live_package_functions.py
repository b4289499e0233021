"""e2e: Function resources whose code is a package of the brokers' packages management.

On the operator's live cluster (see test_operator_live_cluster.py), a PulsarCluster
whose brokers run with enablePackagesManagement=true (spec.broker.config) keeps
function code as packages. The test uploads a module through the brokers' REST API
(`pulsar-admin packages upload`, a multipart POST to /admin/v3/packages/function/...),
then applies two Function resources naming it in python.pyLocation as
function://public/default/<name>@v1: function-mesh's kind with pulsar.pulsarConfig
(the cluster's `<cluster>-service-urls` ConfigMap, whose webServiceURL the operator
puts in function.json) and our own kind with clusterRef (the cluster's
status.webServiceURL). Their instances download the package from the brokers and
run it: what is published to their inputs comes out with the package's "?" (not
the image's "!"). A second version of the package, applied by changing the
resource, rolls the instances onto the new code.
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api, harness
from pulsar_operator.kubelet_emulation import live as live_env

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which(emulation.KUBECTL), reason="kubectl is not installed"),
    pytest.mark.skipif(not shutil.which("etcd"), reason="etcd is not installed"),
    pytest.mark.skipif(harness.unavailable_reason() is not None, reason=str(harness.unavailable_reason())),
]
NS = "default"
CLUSTER = "pkg-mini"
READY_TIMEOUT_S = 150.0
WAIT_S = 90.0
GROUP = "pulsar.pulsar-py.dev/v1alpha1"
CLUSTERS = api.Resource(GROUP, "pulsarclusters", "PulsarCluster")
FUNCTIONS = api.Resource(GROUP, "functions", "Function")
MESH_FUNCTIONS = api.Resource("compute.functionmesh.io/v1alpha1", "functions", "Function")
PULSAR_ADMIN = str(pathlib.Path(sys.executable).with_name("pulsar-admin"))
PACKAGE = "function://public/default/question@v1"
CLUSTER_YAML = f"""
apiVersion: pulsar.pulsar-py.dev/v1alpha1
kind: PulsarCluster
metadata:
  name: {CLUSTER}
spec:
  etcd: {{replicas: 1}}
  bookkeeper: {{replicas: 2}}
  broker:
    replicas: 1
    config:
      enablePackagesManagement: "true"
  proxy: {{enabled: false}}
"""
#: The package's code: not the image's exclamation example, so the output shows which ran.
MODULE = '''
import pulsar


class Question(pulsar.Function):
    def process(self, input, context):
        return input + "{suffix}"
'''
#: function-mesh's form of a packaged Python function: py names the file, pyLocation the package.
MESH_FUNCTION = f"""
apiVersion: compute.functionmesh.io/v1alpha1
kind: Function
metadata:
  name: question
spec:
  className: question.Question
  replicas: 1
  input:
    topics: [persistent://public/default/question-in]
  output:
    topic: persistent://public/default/question-out
  pulsar:
    pulsarConfig: {CLUSTER}-service-urls
  python:
    py: question.py
    pyLocation: {PACKAGE}
"""
OUR_FUNCTION = f"""
apiVersion: {GROUP}
kind: Function
metadata:
  name: asked
spec:
  className: question.Question
  replicas: 1
  input:
    topics: [persistent://public/default/asked-in]
  output:
    topic: persistent://public/default/asked-out
  clusterRef: {{name: {CLUSTER}}}
  python:
    pyLocation: {PACKAGE}
"""
#: Publishes N messages to a function's input and reads what it puts on its output.
THROUGH_FUNCTION = """
import sys, pulsar
url, source, sink, suffix, count = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
client = pulsar.Client(url, operation_timeout_seconds=45)
consumer = client.subscribe(sink, "e2e-check-" + suffix.encode().hex(), initial_position=pulsar.InitialPosition.Latest)
producer = client.create_producer(source)
sent = [f"{source}-{i}" for i in range(count)]
for body in sent:
    producer.send(body.encode())
got = []
while len(got) < count:
    message = consumer.receive(timeout_millis=60000)
    consumer.acknowledge(message)
    got.append(message.data().decode())
client.close()
wanted = sorted(body + suffix for body in sent)
print("THROUGH " + ("ok" if sorted(got) == wanted else f"mismatch {sorted(got)} != {wanted}"))
"""


class Live(live_env.LiveCluster):
    async def admin(self, *args: str) -> str:
        url = (await self.status(CLUSTERS, CLUSTER))["webServiceURL"]
        result = await self.cluster.run([PULSAR_ADMIN, "--admin-url", url, *args], timeout_s=90)
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
        return result.stdout

    async def through_function(self, source: str, sink: str, suffix: str, count: int = 5) -> None:
        url = (await self.status(CLUSTERS, CLUSTER))["brokerServiceURL"]
        result = await self.cluster.run([sys.executable, "-c", THROUGH_FUNCTION, url, source, sink, suffix,
                                         str(count)], timeout_s=150)
        assert "THROUGH ok" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]

    def running_pods(self, prefix: str) -> set[str]:
        assert self.cluster.kubelet is not None
        return {runner.name for runner in self.cluster.kubelet.live if runner.name.startswith(prefix)}


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


def ready_with(replicas: int) -> Any:
    def check(obj: dict[str, Any]) -> bool:
        status = obj.get("status") or {}
        return (condition(obj, "Ready").get("status") == "True" and status.get("readyReplicas") == replicas
                and status.get("replicas") == replicas
                and status.get("observedGeneration") == obj["metadata"].get("generation"))
    return check


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[Live]:
    failed_before = request.session.testsfailed
    async with live_env.running(tmp_path_factory.mktemp("live-package-functions"), NS,
                                lambda: request.session.testsfailed > failed_before, 6000) as running:
        yield Live(running.kubeconfig, running.api, running.cluster, running.operator, NS)


async def upload(live: Live, tmp_path: pathlib.Path, package: str, suffix: str) -> None:
    code = tmp_path / "question.py"
    code.write_text(MODULE.format(suffix=suffix))
    uploaded = await live.admin("packages", "upload", package, "--path", str(code),
                                "--description", f"appends {suffix}")
    assert "successfully" in uploaded.lower(), uploaded


async def test_functions_run_the_package_their_py_location_names(live: Live, tmp_path: pathlib.Path) -> None:
    await live.kubectl("apply", "--validate=false", "-f", str(emulation.CRD_DIR))
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=CLUSTER_YAML)
    await live.wait(CLUSTERS, CLUSTER, lambda o: condition(o, "Ready").get("status") == "True",
                    "PulsarCluster Ready=True", READY_TIMEOUT_S)
    await upload(live, tmp_path, PACKAGE, "?")
    assert "v1" in await live.admin("packages", "list-versions", PACKAGE.rpartition("@")[0])
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=MESH_FUNCTION)
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=OUR_FUNCTION)
    mesh = await live.wait(MESH_FUNCTIONS, "question", ready_with(1), "function-mesh Function Ready 1/1")
    ours = await live.wait(FUNCTIONS, "asked", ready_with(1), "our Function Ready 1/1")
    assert "ignoredFields" not in mesh["status"] and "ignoredFields" not in ours["status"]
    web_url = (await live.status(CLUSTERS, CLUSTER))["webServiceURL"]
    for name in ("question-function", "asked-function"):
        config_map = await live.api.get(api.CONFIG_MAPS, NS, name)
        config = json.loads((config_map or {})["data"]["function.json"])
        assert (config["pyLocation"], config["webServiceUrl"]) == (PACKAGE, web_url)
    await live.through_function("persistent://public/default/question-in",
                                "persistent://public/default/question-out", "?")
    await live.through_function("persistent://public/default/asked-in", "persistent://public/default/asked-out", "?")


async def test_a_new_package_version_rolls_the_instances_onto_its_code(live: Live, tmp_path: pathlib.Path) -> None:
    second = PACKAGE.replace("@v1", "@v2")
    await upload(live, tmp_path, second, "??")
    pod = "question-function-0"
    old_uid = ((await live.api.get(api.PODS, NS, pod) or {}).get("metadata") or {}).get("uid")
    await live.kubectl("patch", "functions.compute.functionmesh.io/question", "--type=merge",
                       "-p", json.dumps({"spec": {"python": {"pyLocation": second}}}))

    async def rolled() -> bool:
        """A new instance pod, ready: the old one, which runs v1, is gone."""
        found = await live.api.get(api.PODS, NS, pod) or {}
        statuses = (found.get("status") or {}).get("containerStatuses") or [{}]
        return found.get("metadata", {}).get("uid") not in (None, old_uid) and bool(statuses[0].get("ready"))

    await emulation.wait_for(rolled, WAIT_S, "a new instance pod ready with v2")
    await live.wait(MESH_FUNCTIONS, "question", ready_with(1), "function-mesh Function Ready on v2")
    await live.through_function("persistent://public/default/question-in",
                                "persistent://public/default/question-out", "??")


async def test_a_package_that_does_not_exist_keeps_the_instance_from_becoming_ready(live: Live) -> None:
    missing = PACKAGE.replace("question@v1", "nothing@v1")
    await live.kubectl("patch", f"functions.{GROUP.split('/')[0]}/asked", "--type=merge",
                       "-p", json.dumps({"spec": {"python": {"pyLocation": missing}}}))

    async def failing() -> bool:
        pod = await live.api.get(api.PODS, NS, "asked-function-0") or {}
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        return int(statuses[0].get("restartCount") or 0) >= 1 and not statuses[0].get("ready")

    await emulation.wait_for(failing, WAIT_S, "the instance restarting: its package is not found")
    ours = await live.wait(FUNCTIONS, "asked", lambda o: condition(o, "Ready").get("status") == "False",
                           "our Function Ready=False")
    assert condition(ours, "Ready")["reason"] == "InstancesNotReady"
    log = live.cluster.logs(20000)
    assert "nothing@v1" in log, log[-3000:]


async def test_deleting_the_functions_stops_their_instances(live: Live) -> None:
    await live.kubectl("delete", "functions.compute.functionmesh.io/question", f"functions.{GROUP.split('/')[0]}/asked",
                       "--wait=false")
    await emulation.wait_for(lambda: not live.running_pods("question-function-")
                             and not live.running_pods("asked-function-"), WAIT_S, "every instance process stopped")
