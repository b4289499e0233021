"""The kubelet harness itself, with a small web server instead of Pulsar: pods run, resolve
cluster names, keep their claims across restarts, and go away with their owners.

One emulator and one harness serve the module; the tests run in order on a StatefulSet
`web` (two replicas of `python -m http.server` on their pod address, a ClusterIP Service
`web` and a headless Service `web-headless`).
"""

from __future__ import annotations

import copy
import json
import pathlib
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from pulsar_operator import emulation
from pulsar_operator.kubelet_emulation import api, harness

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.slow,
    pytest.mark.skipif(harness.unavailable_reason() is not None, reason=str(harness.unavailable_reason())),
]
WAIT_S = 30.0
NS = "default"
LABELS = {"app": "web"}
#: Every start appends the pod's hostname to a file on its claim, then serves the claim.
SERVE = ("hostname >> /srv/web/starts && cp /etc/web/greeting /srv/web/greeting && "
         "exec python3 -m http.server 8080 --bind $(POD_IP) --directory /srv/web")


def web_set(name: str = "web", replicas: int = 2, **spec: Any) -> dict[str, Any]:
    probe = {"httpGet": {"path": "/starts", "port": "http"}, "periodSeconds": 1}
    container = {
        "name": "web", "image": "python", "command": ["/bin/sh", "-c", SERVE],
        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        "ports": [{"name": "http", "containerPort": 8080}], "readinessProbe": probe,
        "volumeMounts": [{"name": "data", "mountPath": "/srv/web"},
                         {"name": "config", "mountPath": "/etc/web", "readOnly": True}],
    }
    return {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": replicas, "serviceName": f"{name}-headless", "selector": {"matchLabels": LABELS},
            "template": {"metadata": {"labels": LABELS}, "spec": {
                "containers": [container], "terminationGracePeriodSeconds": 5,
                "volumes": [{"name": "config", "configMap": {"name": "web"}}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                      "spec": {"resources": {"requests": {"storage": "1Gi"}}}}],
            **spec,
        },
    }


def services(name: str = "web") -> list[dict[str, Any]]:
    ports = [{"name": "http", "port": 80, "targetPort": "http"}]
    return [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
         "spec": {"selector": LABELS, "ports": ports}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"{name}-headless", "namespace": NS},
         "spec": {"selector": LABELS, "ports": ports, "clusterIP": "None", "publishNotReadyAddresses": True}},
    ]


class Env:
    def __init__(self, client: api.ApiClient, cluster: harness.Harness) -> None:
        self.api = client
        self.cluster = cluster

    async def wait(self, resource: api.Resource, name: str, predicate: Any, what: str) -> dict[str, Any]:
        found: dict[str, Any] = {}

        async def check() -> bool:
            obj = await self.api.get(resource, NS, name)
            if obj is not None and predicate(obj):
                found.update(obj)
                return True
            return False

        await emulation.wait_for(check, WAIT_S, what)
        return found

    async def fetch(self, url: str) -> str:
        script = f"import urllib.request; print(urllib.request.urlopen({url!r}, timeout=5).read().decode(), end='')"
        result = await self.cluster.run(["python3", "-c", script], timeout_s=20)
        assert result.returncode == 0, result.stderr
        return result.stdout


def ready(sts: dict[str, Any], replicas: int) -> bool:
    status = sts.get("status") or {}
    return status.get("readyReplicas") == replicas and status.get("replicas") == replicas


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    state = tmp_path_factory.mktemp("harness")
    async with emulation.running_emulator() as (_, url):
        client = api.ApiClient(url)
        cluster = harness.Harness(url, state, backoff_initial_s=0.5, backoff_max_s=2.0)
        await cluster.start()
        try:
            await client.create(api.CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                  "metadata": {"name": "web", "namespace": NS},
                                                  "data": {"greeting": "hello"}})
            for service in services():
                await client.create(api.SERVICES, service)
            await client.create(api.STATEFUL_SETS, web_set())
            yield Env(client, cluster)
        except BaseException:
            print(cluster.logs())
            raise
        finally:
            await cluster.stop()
            await client.close()


def claim_dir(env: Env, name: str) -> pathlib.Path:
    return env.cluster.state_dir / "volumes" / NS / name


async def test_a_statefulset_runs_its_pods_in_order_and_reports_them_ready(env: Env) -> None:
    sts = await env.wait(api.STATEFUL_SETS, "web", lambda o: ready(o, 2), "two ready replicas")
    assert sts["status"]["updatedReplicas"] == 2 and sts["status"]["observedGeneration"] == 1
    first = await env.api.get(api.PODS, NS, "web-0")
    second = await env.api.get(api.PODS, NS, "web-1")
    assert first is not None and second is not None
    assert first["status"]["podIP"] != second["status"]["podIP"]
    assert first["status"]["startTime"] <= second["status"]["startTime"]
    assert first["spec"]["hostname"] == "web-0" and first["spec"]["subdomain"] == "web-headless"
    claim = await env.api.get(api.CLAIMS, NS, "data-web-0")
    assert claim is not None and claim["status"]["phase"] == "Bound"


async def test_pods_are_reached_by_service_and_pod_names_with_their_own_hostname(env: Env) -> None:
    assert await env.fetch("http://web-1.web-headless.default.svc.cluster.local:8080/starts") == "web-1\n"
    assert await env.fetch("http://web-0.web-headless.default.svc:8080/greeting") == "hello"
    assert (await env.fetch("http://web.default.svc/starts")) in ("web-0\n", "web-1\n")
    service = await env.api.get(api.SERVICES, NS, "web")
    assert service is not None and service["spec"]["clusterIP"].startswith("127.78.")


async def test_a_killed_pod_restarts_in_place_and_keeps_its_claim(env: Env) -> None:
    ip = env.cluster.pod_ip("web-0")
    env.cluster.kill_pod("web-0", signum=signal.SIGKILL)

    def restarted(pod: dict[str, Any]) -> bool:
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        return statuses[0].get("restartCount") == 1 and statuses[0].get("ready") is True

    pod = await env.wait(api.PODS, "web-0", restarted, "web-0 restarted and ready")
    assert pod["status"]["podIP"] == ip
    assert (claim_dir(env, "data-web-0") / "starts").read_text() == "web-0\nweb-0\n"
    assert "Signal 9" in json.dumps(pod["status"]["containerStatuses"][0]["lastState"])


async def test_a_deleted_pod_is_created_again_with_a_new_address_and_the_same_claim(env: Env) -> None:
    old = await env.api.get(api.PODS, NS, "web-1")
    assert old is not None
    assert await env.api.delete(api.PODS, NS, "web-1")
    pod = await env.wait(api.PODS, "web-1", lambda o: o["metadata"]["uid"] != old["metadata"]["uid"]
                         and any(c["type"] == "Ready" and c["status"] == "True" for c in o["status"]["conditions"]),
                         "web-1 replaced")
    assert pod["status"]["podIP"] != old["status"]["podIP"]
    assert (claim_dir(env, "data-web-1") / "starts").read_text() == "web-1\nweb-1\n"
    assert await env.fetch("http://web-1.web-headless.default.svc:8080/starts") == "web-1\nweb-1\n"


async def test_a_config_map_edit_reaches_the_mounted_files(env: Env) -> None:
    await env.api.patch(api.CONFIG_MAPS, NS, "web", {"data": {"greeting": "bonjour"}})
    pod_dir = env.cluster.state_dir / "pods" / NS
    files = list(pod_dir.glob("web-0-*/volumes/config/greeting"))
    await emulation.wait_for(lambda: all(f.read_text() == "bonjour" for f in files), WAIT_S, "greeting updated")


async def test_a_template_change_rolls_the_pods_from_the_highest_ordinal(env: Env) -> None:
    before = {n: (await env.api.get(api.PODS, NS, n) or {})["metadata"]["uid"] for n in ("web-0", "web-1")}
    await env.api.patch(api.STATEFUL_SETS, NS, "web", {"spec": {"template": {"metadata": {
        "annotations": {"roll": "1"}}}}})
    sts = await env.wait(api.STATEFUL_SETS, "web", lambda o: ready(o, 2) and o["status"]["observedGeneration"] == 2
                         and o["status"]["updatedReplicas"] == 2
                         and o["status"]["currentRevision"] == o["status"]["updateRevision"], "rolled")
    after = {n: (await env.api.get(api.PODS, NS, n) or {})["metadata"] for n in ("web-0", "web-1")}
    assert all(after[n]["uid"] != before[n] for n in after)
    assert after["web-1"]["creationTimestamp"] <= after["web-0"]["creationTimestamp"]


async def test_scaling_down_with_whenscaled_delete_removes_the_claims_of_the_removed_pods(env: Env) -> None:
    await env.api.patch(api.STATEFUL_SETS, NS, "web", {"spec": {
        "replicas": 1, "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Delete"}}})
    await env.wait(api.STATEFUL_SETS, "web", lambda o: ready(o, 1), "one replica")
    await emulation.wait_for(lambda: not claim_dir(env, "data-web-1").exists(), WAIT_S, "claim dir removed")
    assert await env.api.get(api.CLAIMS, NS, "data-web-1") is None
    assert claim_dir(env, "data-web-0").exists()


async def test_deleting_the_statefulset_stops_its_pods_and_keeps_retained_claims(env: Env) -> None:
    pid = env.cluster.kubelet.runners[(NS, "web-0")].process_groups()[0]  # type: ignore[union-attr]
    assert await env.api.delete(api.STATEFUL_SETS, NS, "web")
    await emulation.wait_for(lambda: not env.cluster.kubelet.live, WAIT_S, "pods stopped")  # type: ignore[union-attr]
    assert await env.api.get(api.PODS, NS, "web-0") is None
    assert not pathlib.Path(f"/proc/{pid}").exists()
    assert (claim_dir(env, "data-web-0") / "starts").exists()
    assert await env.api.get(api.CLAIMS, NS, "data-web-0") is not None


async def test_claims_of_a_statefulset_with_whendeleted_delete_go_with_it(env: Env) -> None:
    body = web_set("gone", replicas=1, persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"})
    body["spec"]["selector"]["matchLabels"] = body["spec"]["template"]["metadata"]["labels"] = {"app": "gone"}
    # exec probes run inside the container's mount namespace, where the claim is mounted at /srv/web
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["readinessProbe"] = {"exec": {"command": ["test", "-s", "/srv/web/starts"]}, "periodSeconds": 1}
    container["livenessProbe"] = {"tcpSocket": {"port": "http"}, "periodSeconds": 1}
    await env.api.create(api.STATEFUL_SETS, copy.deepcopy(body))
    await env.wait(api.STATEFUL_SETS, "gone", lambda o: ready(o, 1), "gone ready")
    assert claim_dir(env, "data-gone-0").exists()
    assert await env.api.delete(api.STATEFUL_SETS, NS, "gone")
    await emulation.wait_for(lambda: not claim_dir(env, "data-gone-0").exists(), WAIT_S, "claim dir removed")
    assert await env.api.get(api.CLAIMS, NS, "data-gone-0") is None


async def test_a_failing_liveness_probe_restarts_the_container(env: Env) -> None:
    body = web_set("sick", replicas=1)
    body["spec"]["selector"]["matchLabels"] = body["spec"]["template"]["metadata"]["labels"] = {"app": "sick"}
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["livenessProbe"] = {"tcpSocket": {"port": 9}, "periodSeconds": 1, "failureThreshold": 2}
    await env.api.create(api.STATEFUL_SETS, body)

    def restarted(pod: dict[str, Any]) -> bool:
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        return statuses[0].get("restartCount", 0) >= 1

    await env.wait(api.PODS, "sick-0", restarted, "sick-0 restarted by its liveness probe")
    assert await env.api.delete(api.STATEFUL_SETS, NS, "sick")
