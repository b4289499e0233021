"""e2e: the real operator process against kmock's Kubernetes emulator, driven with kubectl.

One emulator, one operator process (`python -m pulsar_operator`) and one
recording admin server serve the whole module; the tests run in order, as a
user would: apply the CRDs and the examples with kubectl, change them, and
read the results back by name through the API.

The admin API here is conftest.RecordingAdminServer, a stand-in for a
broker's admin REST API; running these flows against `pulsar standalone` is
left for when the broker exists.
"""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import yaml
from pulsar_common.testing import free_port
from pulsar_operator import emulation

from .conftest import EXAMPLES, RecordingAdminServer

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.slow,
    pytest.mark.skipif(not shutil.which(emulation.KUBECTL), reason="kubectl is not installed"),
]
WAIT_S = 30.0
NS = "default"
GROUP_PATH = f"/apis/pulsar.pulsar-py.dev/v1alpha1/namespaces/{NS}"
APPS = f"/apis/apps/v1/namespaces/{NS}/statefulsets"
CORE = f"/api/v1/namespaces/{NS}"


class Env:
    def __init__(self, url: str, kubeconfig: pathlib.Path, admin: RecordingAdminServer,
                 operator: emulation.OperatorProcess) -> None:
        self.url = url
        self.kubeconfig = kubeconfig
        self.admin = admin
        self.operator = operator

    async def get(self, path: str) -> dict[str, Any] | None:
        async with aiohttp.ClientSession() as session, session.get(self.url + path) as resp:
            if resp.status == 404:
                return None
            resp.raise_for_status()
            result: dict[str, Any] = await resp.json()
            return result

    async def patch_status(self, path: str, status: dict[str, Any]) -> None:
        async with aiohttp.ClientSession() as session, session.patch(
            self.url + path + "/status", json={"status": status},
            headers={"Content-Type": "application/merge-patch+json"},
        ) as resp:
            resp.raise_for_status()

    async def apply(self, doc: dict[str, Any]) -> str:
        return await emulation.kubectl(self.kubeconfig, "apply", "--validate=false", "-f", "-",
                                       stdin=yaml.safe_dump(doc))

    async def kubectl(self, *args: str) -> str:
        return await emulation.kubectl(self.kubeconfig, *args)

    async def wait(self, path: str, predicate: Any, what: str) -> dict[str, Any]:
        found: dict[str, Any] = {}

        async def check() -> bool:
            obj = await self.get(path)
            if obj is not None and predicate(obj):
                found.update(obj)
                return True
            return False

        await self.operator.healthy()  # fails fast with the log if the operator died
        await emulation.wait_for(check, WAIT_S, what)
        return found


def example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    return doc


def cond(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions", []) if c["type"] == kind), {})


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    tmp = tmp_path_factory.mktemp("e2e")
    admin = RecordingAdminServer()
    await admin.start()
    async with emulation.running_emulator() as (_, url):
        kubeconfig = emulation.write_kubeconfig(tmp / "kubeconfig", url)
        await emulation.kubectl(kubeconfig, "apply", "--validate=false", "-f", str(emulation.CRD_DIR))
        operator = emulation.OperatorProcess(kubeconfig, free_port(), "--no-leader-election", "--all-namespaces",
                                             "--resync-interval", "1", log=tmp / "operator.log")
        await operator.start()
        try:
            await emulation.wait_for(operator.healthy, WAIT_S, "operator /healthz")
            yield Env(url, kubeconfig, admin, operator)
        finally:
            await operator.stop()
            await admin.stop()


CLUSTER_CHILDREN = [
    f"{APPS}/pulsar-mini-{c}" for c in ("etcd", "bookie", "broker", "proxy")
] + [
    f"{CORE}/services/pulsar-mini-{s}" for s in ("etcd", "etcd-headless", "bookie", "broker", "broker-headless",
                                                  "proxy", "proxy-headless")
] + [
    f"{CORE}/configmaps/pulsar-mini-{c}" for c in ("bookie", "broker", "proxy", "service-urls")
] + [f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/pulsar-mini-bookie"]


async def test_the_sample_cluster_becomes_statefulsets_services_configmaps_and_a_pdb(env: Env) -> None:
    out = await env.apply(example("pulsar-cluster.yaml"))
    assert "pulsarcluster.pulsar.pulsar-py.dev/pulsar-mini created" in out
    for path in CLUSTER_CHILDREN:
        obj = await env.wait(path, lambda o: True, path)
        assert obj["metadata"]["ownerReferences"][0]["kind"] == "PulsarCluster"
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "pulsar-operator"
    cluster = await env.wait(f"{GROUP_PATH}/pulsarclusters/pulsar-mini", lambda o: cond(o, "Progressing"), "status")
    assert cond(cluster, "Ready")["status"] == "False"
    assert cluster["status"]["brokerServiceURL"] == "pulsar://pulsar-mini-proxy.default.svc:6650"
    assert cluster["status"]["webServiceURL"] == "http://pulsar-mini-broker.default.svc:8080"
    bookie = await env.get(f"{APPS}/pulsar-mini-bookie")
    assert bookie is not None and bookie["spec"]["replicas"] == 3
    assert [c["metadata"]["name"] for c in bookie["spec"]["volumeClaimTemplates"]] == ["journal", "ledgers"]


async def test_a_replicas_change_updates_the_statefulset_and_status(env: Env) -> None:
    doc = example("pulsar-cluster.yaml")
    doc["spec"]["broker"]["replicas"] = 3
    await env.apply(doc)
    await env.wait(f"{APPS}/pulsar-mini-broker", lambda o: o["spec"]["replicas"] == 3, "broker scaled to 3")
    await env.wait(f"{GROUP_PATH}/pulsarclusters/pulsar-mini",
                   lambda o: o["status"]["components"]["broker"]["desiredReplicas"] == 3, "status of 3 brokers")


async def test_ready_replicas_of_the_statefulsets_reach_the_cluster_status(env: Env) -> None:
    # The emulator runs no StatefulSet controller: report pods ready the way it would.
    for component, replicas in (("etcd", 1), ("bookie", 3), ("broker", 3), ("proxy", 1)):
        await env.patch_status(f"{APPS}/pulsar-mini-{component}", {"replicas": replicas, "readyReplicas": replicas})
    cluster = await env.wait(f"{GROUP_PATH}/pulsarclusters/pulsar-mini",
                             lambda o: cond(o, "Ready").get("status") == "True", "Ready=True")
    assert cluster["status"]["components"]["bookkeeper"] == {
        "replicas": 3, "readyReplicas": 3, "desiredReplicas": 3,
        "selector": "app.kubernetes.io/component=bookie,app.kubernetes.io/instance=pulsar-mini,"
                    "app.kubernetes.io/name=pulsar"}


async def test_resyncs_of_a_settled_cluster_write_nothing(env: Env) -> None:
    paths = CLUSTER_CHILDREN + [f"{GROUP_PATH}/pulsarclusters/pulsar-mini"]

    async def versions() -> dict[str, str]:
        return {p: (await env.get(p) or {}).get("metadata", {}).get("resourceVersion", "") for p in paths}

    def resyncs() -> int:
        return env.operator.log.read_text().count("Timer 'resync' succeeded")

    before, start = await versions(), resyncs()
    await emulation.wait_for(lambda: resyncs() >= start + 3, WAIT_S, "three resyncs")
    assert await versions() == before


async def test_a_bookie_scale_down_waits_for_the_decommission_loop(env: Env) -> None:
    doc = example("pulsar-cluster.yaml")
    doc["spec"]["broker"]["replicas"] = 3
    doc["spec"]["bookkeeper"]["replicas"] = 2
    await env.apply(doc)
    # No bookie runs here to drain: the StatefulSet keeps its size and the status says why.
    cluster = await env.wait(f"{GROUP_PATH}/pulsarclusters/pulsar-mini",
                             lambda o: cond(o, "Progressing").get("reason") == "DecommissioningBookies", "held")
    assert cluster["status"]["heldBookieReplicas"] == 3
    bookie = await env.get(f"{APPS}/pulsar-mini-bookie")
    assert bookie is not None and bookie["spec"]["replicas"] == 3


async def test_with_decommission_disabled_the_scale_down_is_held_and_degraded(env: Env) -> None:
    doc = example("pulsar-cluster.yaml")
    doc["spec"]["broker"]["replicas"] = 3
    doc["spec"]["bookkeeper"]["replicas"] = 2
    doc["spec"]["decommission"] = {"enabled": False}
    await env.apply(doc)
    await env.wait(f"{GROUP_PATH}/pulsarclusters/pulsar-mini",
                   lambda o: cond(o, "Degraded").get("reason") == "DecommissionDisabled", "held, Degraded")
    bookie = await env.get(f"{APPS}/pulsar-mini-bookie")
    assert bookie is not None and bookie["spec"]["replicas"] == 3


async def test_a_changed_etcd_member_count_waits_for_the_membership_loop(env: Env) -> None:
    doc = example("pulsar-cluster.yaml")
    doc["spec"]["broker"]["replicas"] = 3
    doc["spec"]["etcd"]["replicas"] = 3
    await env.apply(doc)
    # No etcd runs here: the loop cannot read the members, so the StatefulSet keeps its size.
    await env.wait(f"{GROUP_PATH}/pulsarclusters/pulsar-mini",
                   lambda o: cond(o, "EtcdMembership").get("reason") == "Unknown", "etcd membership unknown")
    etcd = await env.get(f"{APPS}/pulsar-mini-etcd")
    assert etcd is not None and etcd["spec"]["replicas"] == 1
    assert etcd["spec"]["updateStrategy"] == {"type": "OnDelete"}


async def test_an_invalid_cluster_is_reported_and_gets_no_children(env: Env) -> None:
    doc = example("pulsar-cluster.yaml")
    doc["metadata"]["name"] = "broken"
    doc["spec"]["broker"]["config"]["managedLedgerDefaultAckQuorum"] = "3"
    await env.apply(doc)  # --validate=false and no CEL in the emulator: the operator must catch it
    cluster = await env.wait(f"{GROUP_PATH}/pulsarclusters/broken",
                             lambda o: cond(o, "Degraded").get("reason") == "InvalidSpec", "InvalidSpec")
    assert "AckQuorum (3) <= WriteQuorum (2)" in cond(cluster, "Degraded")["message"]
    assert await env.get(f"{APPS}/broken-broker") is None


async def test_a_function_mesh_function_becomes_instances_and_an_hpa(env: Env) -> None:
    doc = example("function.yaml")
    doc["spec"]["statefulConfig"] = {"pulsar": {"serviceUrl": "bk://bookies:4181"}}
    await env.apply(doc)
    hpa_path = f"/apis/autoscaling/v2/namespaces/{NS}/horizontalpodautoscalers/exclamation-function"
    sts = await env.wait(f"{APPS}/exclamation-function", lambda o: True, "function StatefulSet")
    assert sts["spec"]["template"]["spec"]["containers"][0]["command"][:2] == ["pulsar", "function-instance"]
    await env.wait(f"{CORE}/services/exclamation-function", lambda o: True, "function Service")
    config = await env.wait(f"{CORE}/configmaps/exclamation-function", lambda o: True, "function ConfigMap")
    assert '"className": "pulsar_functions.examples.exclamation_function.ExclamationFunction"' in (
        config["data"]["function.json"])
    hpa = await env.wait(hpa_path, lambda o: True, "HPA")
    assert hpa["spec"]["maxReplicas"] == 3 and hpa["spec"]["scaleTargetRef"]["kind"] == "Function"
    function = await env.wait("/apis/compute.functionmesh.io/v1alpha1/namespaces/default/functions/exclamation",
                              lambda o: (o.get("status") or {}).get("ignoredFields"), "ignored fields in status")
    assert function["status"]["ignoredFields"][0]["field"] == "spec.statefulConfig"
    assert function["status"]["selector"].startswith("app.kubernetes.io/component=function")
    del doc["spec"]["maxReplicas"]
    await env.apply(doc)
    await env.wait(hpa_path.rsplit("/", 1)[0], lambda o: not o.get("items"), "HPA deleted")
    assert await env.get(hpa_path) is None


async def test_our_own_function_kind_is_reconciled_too(env: Env) -> None:
    doc = example("function.yaml")
    doc["apiVersion"] = "pulsar.pulsar-py.dev/v1alpha1"
    doc["metadata"]["name"] = "shout"
    doc["spec"].pop("maxReplicas")
    doc["spec"]["replicas"] = 2
    await env.apply(doc)
    sts = await env.wait(f"{APPS}/shout-function", lambda o: True, "StatefulSet of our Function")
    assert sts["spec"]["replicas"] == 2
    assert sts["metadata"]["ownerReferences"][0]["apiVersion"] == "pulsar.pulsar-py.dev/v1alpha1"
    # The emulator runs no StatefulSet controller: report the instances ready the way it would.
    await env.patch_status(f"{APPS}/shout-function", {"replicas": 2, "readyReplicas": 2})
    function = await env.wait(f"{GROUP_PATH}/functions/shout", lambda o: cond(o, "Ready").get("status") == "True",
                              "our Function Ready")
    assert (function["status"]["replicas"], function["status"]["readyReplicas"]) == (2, 2)


async def test_a_tenant_on_an_unreachable_cluster_reports_the_error(env: Env) -> None:
    await env.apply(example("tenant.yaml"))
    tenant = await env.wait(f"{GROUP_PATH}/tenants/acme", lambda o: cond(o, "Degraded").get("status") == "True",
                            "tenant error in status")
    assert "pulsar-mini-broker.default.svc:8080" in cond(tenant, "Degraded")["message"]


async def test_tenant_and_namespace_are_created_through_the_admin_api(env: Env) -> None:
    tenant = example("tenant.yaml")
    tenant["spec"]["clusterRef"]["webServiceURL"] = env.admin.url
    await env.apply(tenant)
    await env.wait(f"{GROUP_PATH}/tenants/acme", lambda o: cond(o, "Ready").get("status") == "True", "tenant Ready")
    assert env.admin.tenants["acme"] == {"adminRoles": ["acme-admin"], "allowedClusters": ["pulsar-mini"]}
    namespace = example("namespace.yaml")
    namespace["spec"]["clusterRef"]["webServiceURL"] = env.admin.url
    await env.apply(namespace)
    await env.wait(f"{GROUP_PATH}/pulsarnamespaces/acme-orders", lambda o: cond(o, "Ready").get("status") == "True",
                   "namespace Ready")
    assert env.admin.namespaces["acme/orders"]["retention_policies"] == {"retentionTimeInMinutes": 1440,
                                                                         "retentionSizeInMB": 1024}


async def test_drift_in_pulsar_is_corrected_on_the_timer(env: Env) -> None:
    env.admin.namespaces["acme/orders"]["message_ttl_in_seconds"] = 5

    async def corrected() -> bool:
        return bool(env.admin.namespaces["acme/orders"]["message_ttl_in_seconds"] == 86400)

    await emulation.wait_for(corrected, WAIT_S, "messageTTL drift corrected")


async def test_deleting_with_clean_up_after_deletion_deletes_in_pulsar(env: Env) -> None:
    await env.kubectl("delete", "pulsarnamespace", "acme-orders", "--wait=false")
    await env.kubectl("delete", "tenant", "acme", "--wait=false")
    await env.wait(f"{GROUP_PATH}/tenants", lambda o: not o.get("items"), "tenant gone from Kubernetes")
    await env.wait(f"{GROUP_PATH}/pulsarnamespaces", lambda o: not o.get("items"), "namespace gone from Kubernetes")
    assert ("DELETE", "/admin/v2/tenants/acme", None) in env.admin.requests
    assert ("DELETE", "/admin/v2/namespaces/acme/orders", None) in env.admin.requests
    assert "acme" not in env.admin.tenants


async def test_deleting_with_keep_after_deletion_leaves_pulsar_alone(env: Env) -> None:
    tenant = example("tenant.yaml")
    tenant["metadata"]["name"] = "kept"
    tenant["spec"].update(lifecyclePolicy="KeepAfterDeletion", clusterRef={"webServiceURL": env.admin.url})
    await env.apply(tenant)
    await env.wait(f"{GROUP_PATH}/tenants/kept", lambda o: cond(o, "Ready").get("status") == "True", "kept Ready")
    await env.kubectl("delete", "tenant", "kept", "--wait=false")
    await env.wait(f"{GROUP_PATH}/tenants", lambda o: not o.get("items"), "tenant gone from Kubernetes")
    assert "kept" in env.admin.tenants
    assert not [r for r in env.admin.requests if r[0] == "DELETE" and r[1] == "/admin/v2/tenants/kept"]


async def test_a_tenant_of_a_missing_cluster_reports_it_and_deletes_without_cleanup(env: Env) -> None:
    tenant = example("tenant.yaml")
    tenant["metadata"]["name"] = "orphan"
    tenant["spec"]["clusterRef"] = {"name": "no-such-cluster"}
    await env.apply(tenant)
    found = await env.wait(f"{GROUP_PATH}/tenants/orphan", lambda o: cond(o, "Degraded").get("status") == "True",
                           "ClusterGone in status")
    assert cond(found, "Degraded")["reason"] == "ClusterGone"
    await env.kubectl("delete", "tenant", "orphan", "--wait=false")
    await env.wait(f"{GROUP_PATH}/tenants", lambda o: not o.get("items"), "finalizer released")
