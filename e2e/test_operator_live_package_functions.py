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
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api

from e2e import operator_live
from e2e.operator_live import (
    CLUSTERS,
    FUNCTIONS,
    GROUP,
    MESH_FUNCTIONS,
    NS,
    READY_TIMEOUT_S,
    condition,
    is_ready,
)

pytestmark = operator_live.MARKS
CLUSTER = "pkg-mini"
WAIT_S = 90.0
PACKAGE = "function://public/default/question@v1"
CLUSTER_SPEC = operator_live.packages_cluster(CLUSTER)
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


class Live(operator_live.Live):
    async def admin(self, *args: str) -> str:
        return await self.admin_ok(CLUSTER, *args)

    async def through_function(self, source: str, sink: str, suffix: str, count: int = 5) -> None:
        """A subscription of its own per suffix, from the latest message: only what this check sends."""
        await self.assert_through(CLUSTER, source, sink, suffix, count,
                                  "e2e-check-" + suffix.encode().hex(), "Latest")


def ready_with(replicas: int) -> Any:
    """Ready with that many replicas, for the resource's latest change (a new package version)."""
    return operator_live.ready_with(replicas, observed=True)


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def live(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> AsyncIterator[Live]:
    async with operator_live.started(Live, tmp_path_factory.mktemp("live-package-functions"), request) as running:
        yield running


async def upload(live: Live, tmp_path: pathlib.Path, package: str, suffix: str) -> None:
    code = tmp_path / "question.py"
    code.write_text(MODULE.format(suffix=suffix))
    uploaded = await live.admin("packages", "upload", package, "--path", str(code),
                                "--description", f"appends {suffix}")
    assert "successfully" in uploaded.lower(), uploaded


async def test_functions_run_the_package_their_py_location_names(live: Live, tmp_path: pathlib.Path) -> None:
    await live.kubectl("apply", "--validate=false", "-f", str(emulation.CRD_DIR))
    await live.kubectl("apply", "--validate=false", "-f", "-", stdin=CLUSTER_SPEC)
    await live.wait(CLUSTERS, CLUSTER, is_ready, "PulsarCluster Ready=True", READY_TIMEOUT_S)
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
