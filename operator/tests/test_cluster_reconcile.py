"""PulsarCluster -> desired objects, status and admin calls (pure reconcile, table-driven)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest
from pulsar_operator import applier, cluster_config, cluster_reconcile, naming
from pulsar_operator.cluster_reconcile import ObservedSet
from pulsar_operator.plan import ObjectRef

NOW = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:05:00Z"
K8S_VERSION = "1.37.0"
Example = Callable[[str], dict[str, Any]]


def cluster(example: Example, **changes: Any) -> dict[str, Any]:
    body = example("pulsar-cluster.yaml")
    for path, value in changes.items():
        node = body["spec"]
        *parents, leaf = path.split("__")
        for key in parents:
            node = node.setdefault(key, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return body


def names(objects: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(o["kind"], o["metadata"]["name"]) for o in objects}


def by(objects: tuple[dict[str, Any], ...], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name)


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == kind)


def ready_sets(plan_objects: tuple[dict[str, Any], ...]) -> dict[str, ObservedSet | None]:
    """Observed state where every StatefulSet of the plan runs all its replicas, ready."""
    result: dict[str, ObservedSet | None] = {}
    for obj in plan_objects:
        if obj["kind"] == "StatefulSet":
            component = obj["metadata"]["labels"]["app.kubernetes.io/component"]
            n = obj["spec"]["replicas"]
            result[component] = ObservedSet(spec_replicas=n, replicas=n, ready_replicas=n)
    return result


MINI_CHILDREN = {
    ("Service", "pulsar-mini-etcd"), ("Service", "pulsar-mini-etcd-headless"), ("StatefulSet", "pulsar-mini-etcd"),
    ("ConfigMap", "pulsar-mini-bookie"), ("Service", "pulsar-mini-bookie"), ("StatefulSet", "pulsar-mini-bookie"),
    ("PodDisruptionBudget", "pulsar-mini-bookie"),
    ("ConfigMap", "pulsar-mini-broker"), ("Service", "pulsar-mini-broker"), ("Service", "pulsar-mini-broker-headless"),
    ("StatefulSet", "pulsar-mini-broker"),
    ("ConfigMap", "pulsar-mini-proxy"), ("Service", "pulsar-mini-proxy"), ("Service", "pulsar-mini-proxy-headless"),
    ("StatefulSet", "pulsar-mini-proxy"),
    ("ConfigMap", "pulsar-mini-service-urls"),
}
PROXY = {n for n in MINI_CHILDREN if "proxy" in n[1]}
WORKER = {("ConfigMap", "pulsar-mini-functions-worker"), ("Service", "pulsar-mini-functions-worker"),
          ("Service", "pulsar-mini-functions-worker-headless"), ("StatefulSet", "pulsar-mini-functions-worker")}
ETCD = {n for n in MINI_CHILDREN if "etcd" in n[1]}


@pytest.mark.parametrize(("changes", "expected"), [
    ({}, MINI_CHILDREN),
    ({"proxy__enabled": False}, MINI_CHILDREN - PROXY),
    ({"functionsWorker": {"enabled": True}}, MINI_CHILDREN | WORKER),
    ({"etcd": {"externalEndpoints": ["http://etcd-0.example:2379"]}}, MINI_CHILDREN - ETCD),
], ids=["sample", "no-proxy", "functions-worker", "external-etcd"])
def test_cluster_becomes_the_children_its_components_need(example: Example, changes: dict[str, Any],
                                                           expected: set[tuple[str, str]]) -> None:
    plan = cluster_reconcile.reconcile(cluster(example, **changes), {}, NOW)
    assert names(plan.objects) == expected
    # Whatever is switched off is deleted if we made it.
    deleted = {(ref.kind, ref.name) for ref in plan.deletions}
    assert deleted == {n for n in (MINI_CHILDREN | WORKER) - expected if n[0] != "PodDisruptionBudget"}


@pytest.mark.parametrize("changes", [
    {},
    {"proxy__serviceType": "LoadBalancer", "bookkeeper__rackLabel": "topology.kubernetes.io/zone"},
    {"podPolicy": {"serviceAccountName": "pulsar", "nodeSelector": {"disk": "ssd"},
                   "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "pulsar", "effect": "NoSchedule"}],
                   "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                  "whenUnsatisfiable": "DoNotSchedule"}],
                   "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                       "nodeSelectorTerms": [{"matchExpressions": [
                           {"key": "pool", "operator": "In", "values": ["pulsar"]}]}]}}},
                   "labels": {"team": "streaming"}, "annotations": {"example.com/owner": "me"}}},
    {"etcd": {"replicas": 3, "storage": {"size": "2Gi", "storageClassName": "fast"}}},
    {"functionsWorker": {"enabled": True, "replicas": 2, "resources": {"requests": {"cpu": "500m"}}}},
], ids=["sample", "lb-and-racks", "pod-policy", "three-etcd", "functions-worker"])
def test_every_child_validates_against_the_kubernetes_schemas(example: Example, changes: dict[str, Any]) -> None:
    plan = cluster_reconcile.reconcile(cluster(example, **changes), {}, NOW)
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_every_child_is_owned_and_labelled(example: Example) -> None:
    plan = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    for obj in plan.objects:
        meta = obj["metadata"]
        assert meta["namespace"] == "pulsar"
        assert meta["ownerReferences"] == [{
            "apiVersion": naming.API_VERSION, "kind": "PulsarCluster", "name": "pulsar-mini",
            "uid": "uid-pulsar-mini", "controller": True, "blockOwnerDeletion": True}]
        for key in ("name", "instance", "component", "managed-by", "part-of", "version"):
            assert f"app.kubernetes.io/{key}" in meta["labels"], (obj["kind"], meta["name"], key)


def test_bookies_get_journal_and_ledger_volumes_a_pdb_and_anti_affinity(example: Example) -> None:
    plan = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    sts = by(plan.objects, "StatefulSet", "pulsar-mini-bookie")
    claims = {c["metadata"]["name"]: c["spec"]["resources"]["requests"]["storage"]
              for c in sts["spec"]["volumeClaimTemplates"]}
    assert claims == {"journal": "1Gi", "ledgers": "4Gi"}
    assert sts["spec"]["serviceName"] == "pulsar-mini-bookie"
    assert by(plan.objects, "Service", "pulsar-mini-bookie")["spec"]["clusterIP"] == "None"
    pdb = by(plan.objects, "PodDisruptionBudget", "pulsar-mini-bookie")
    assert pdb["spec"]["maxUnavailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"] == sts["spec"]["selector"]["matchLabels"]
    pod = sts["spec"]["template"]["spec"]
    term = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert pod["securityContext"] == {"runAsUser": 10000, "fsGroup": 10000}


@pytest.mark.parametrize(("component", "command", "ports", "liveness", "readiness"), [
    ("bookie", ["pulsar", "bookie", "--config", "/pulsar/conf/bookkeeper.conf"], {3181, 8000},
     ("/heartbeat", 8000), ("/api/v1/bookie/is_ready", 8000)),
    ("broker", ["pulsar", "broker", "--config", "/pulsar/conf/broker.conf"], {6650, 8080},
     ("/status.html", 8080), ("/admin/v2/brokers/ready", 8080)),
    ("proxy", ["pulsar", "proxy", "--config", "/pulsar/conf/proxy.conf"], {6650, 8080},
     ("/status.html", 8080), ("/status.html", 8080)),
    ("etcd", ["etcd", "--name", "$(POD_NAME)", "--data-dir", "/var/lib/etcd"], {2379, 2380},
     ("/health", 2379), ("/health", 2379)),
])
def test_containers_run_the_service_commands_with_their_health_probes(
    example: Example, component: str, command: list[str], ports: set[int],
    liveness: tuple[str, int], readiness: tuple[str, int],
) -> None:
    plan = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    container = by(plan.objects, "StatefulSet", f"pulsar-mini-{component}")["spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:len(command)] == command
    assert {p["containerPort"] for p in container["ports"]} == ports
    for probe, (path, port) in ((container["livenessProbe"], liveness), (container["readinessProbe"], readiness)):
        assert probe["httpGet"] == {"path": path, "port": port}


@pytest.mark.parametrize(("component", "bind_args"), [
    ("etcd", ["--listen-client-urls", "http://$(POD_IP):2379", "--listen-peer-urls", "http://$(POD_IP):2380"]),
    ("bookie", ["--conf", "bookieBindAddress=$(POD_IP)", "--conf", "httpServerHost=$(POD_IP)"]),
    ("broker", ["--conf", "bindAddress=$(POD_IP)"]),
    ("proxy", ["--conf", "bindAddress=$(POD_IP)"]),
])
def test_servers_bind_to_the_pod_ip_from_the_downward_api(
    example: Example, component: str, bind_args: list[str],
) -> None:
    plan = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    container = by(plan.objects, "StatefulSet", f"pulsar-mini-{component}")["spec"]["template"]["spec"]["containers"][0]
    command = container["command"]
    pairs = list(zip(command, command[1:], strict=False))
    assert all(pair in pairs for pair in zip(bind_args[::2], bind_args[1::2], strict=True))
    assert "0.0.0.0" not in " ".join(command)
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in container["env"]


@pytest.mark.parametrize(("policy", "when_deleted"), [(None, "Retain"), ("Retain", "Retain"),
                                                     ("Delete", "Delete")])
def test_volumes_are_kept_or_deleted_with_the_cluster_as_the_spec_says(
    example: Example, policy: str | None, when_deleted: str,
) -> None:
    changes = {} if policy is None else {"persistentVolumeClaimRetentionPolicy": {"whenDeleted": policy}}
    plan = cluster_reconcile.reconcile(cluster(example, **changes), {}, NOW)
    for component in ("etcd", "bookie"):
        sts = by(plan.objects, "StatefulSet", f"pulsar-mini-{component}")
        assert sts["spec"]["persistentVolumeClaimRetentionPolicy"] == {
            "whenDeleted": when_deleted, "whenScaled": "Retain"}  # scaling down never drops data
    assert "persistentVolumeClaimRetentionPolicy" not in by(
        plan.objects, "StatefulSet", "pulsar-mini-broker")["spec"]  # no volumes


def test_config_maps_carry_wiring_and_user_overrides(example: Example) -> None:
    body = cluster(example, broker__config={"managedLedgerDefaultEnsembleSize": "3", "managedLedgerDefaultWriteQuorum": "2",
                                            "managedLedgerDefaultAckQuorum": "2", "maxMessageSize": "1048576"})
    plan = cluster_reconcile.reconcile(body, {}, NOW)
    broker_conf = by(plan.objects, "ConfigMap", "pulsar-mini-broker")["data"]["broker.conf"]
    lines = set(broker_conf.splitlines())
    assert {"clusterName=pulsar-mini", "metadataStoreUrl=etcd:http://pulsar-mini-etcd.pulsar.svc:2379",
            "brokerServicePort=6650", "webServicePort=8080", "managedLedgerDefaultEnsembleSize=3",
            "managedLedgerDefaultWriteQuorum=2", "managedLedgerDefaultAckQuorum=2", "maxMessageSize=1048576"} <= lines
    bookie_conf = set(by(plan.objects, "ConfigMap", "pulsar-mini-bookie")["data"]["bookkeeper.conf"].splitlines())
    assert {"metadataServiceUri=etcd:http://pulsar-mini-etcd.pulsar.svc:2379", "bookiePort=3181",
            "httpServerPort=8000", "journalDirectories=/pulsar/data/journal",
            "ledgerDirectories=/pulsar/data/ledgers"} <= bookie_conf
    urls = by(plan.objects, "ConfigMap", "pulsar-mini-service-urls")["data"]
    assert urls == {"webServiceURL": "http://pulsar-mini-broker.pulsar.svc:8080",
                    "brokerServiceURL": "pulsar://pulsar-mini-proxy.pulsar.svc:6650"}


def test_a_config_edit_changes_the_pod_template_so_pods_roll(example: Example) -> None:
    before = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    after = cluster_reconcile.reconcile(cluster(example, broker__config={"maxMessageSize": "1"}), {}, NOW)

    def template(plan: Any) -> dict[str, Any]:
        return by(plan.objects, "StatefulSet", "pulsar-mini-broker")["spec"]["template"]["metadata"]["annotations"]

    assert template(before) != template(after)


def test_default_ensemble_follows_small_bookie_counts(example: Example) -> None:
    body = cluster(example, broker__config=None, bookkeeper__replicas=1)
    conf = by(cluster_reconcile.reconcile(body, {}, NOW).objects, "ConfigMap", "pulsar-mini-broker")["data"]["broker.conf"]
    assert "managedLedgerDefaultEnsembleSize=1" in conf and "managedLedgerDefaultAckQuorum=1" in conf


@pytest.mark.parametrize(("changes", "message"), [
    ({"broker__config": {"managedLedgerDefaultEnsembleSize": "2", "managedLedgerDefaultWriteQuorum": "2",
                         "managedLedgerDefaultAckQuorum": "3"}}, "AckQuorum (3) <= WriteQuorum (2)"),
    ({"broker__config": {"managedLedgerDefaultEnsembleSize": "2", "managedLedgerDefaultWriteQuorum": "3",
                         "managedLedgerDefaultAckQuorum": "2"}}, "WriteQuorum (3) <= EnsembleSize (2)"),
    ({"broker__config": {"managedLedgerDefaultEnsembleSize": "4"}}, "must be <= spec.bookkeeper.replicas (3)"),
    ({"broker__config": {"managedLedgerDefaultEnsembleSize": "two"}}, "must be an integer"),
    ({"etcd__replicas": 2}, "spec.etcd.replicas must be odd"),
    ({"bookkeeper__replicas": 0}, "spec.bookkeeper.replicas must be >= 1"),
    ({"proxy__serviceType": "Ingress"}, "serviceType must be"),
    ({"broker__replicas": "many"}, "wrong type"),
    ({"persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Archive"}}, "must be Retain or Delete"),
])
def test_an_invalid_spec_is_reported_and_changes_nothing(example: Example, changes: dict[str, Any], message: str) -> None:
    plan = cluster_reconcile.reconcile(cluster(example, **changes), {}, NOW)
    assert plan.objects == () and plan.deletions == () and plan.admin_calls == ()
    assert condition(plan.status, "Ready")["status"] == "False"
    degraded = condition(plan.status, "Degraded")
    assert degraded["status"] == "True" and degraded["reason"] == "InvalidSpec"
    assert message in degraded["message"]
    assert plan.status["observedGeneration"] == 1


def test_a_lower_bookie_count_keeps_the_statefulset_for_the_decommission_loop(example: Example) -> None:
    body = cluster(example, bookkeeper__replicas=2)
    observed = {naming.BOOKIE: ObservedSet(spec_replicas=3, replicas=3, ready_replicas=3)}
    plan = cluster_reconcile.reconcile(body, observed, NOW)
    assert by(plan.objects, "StatefulSet", "pulsar-mini-bookie")["spec"]["replicas"] == 3
    progressing = condition(plan.status, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "DecommissioningBookies")
    assert condition(plan.status, "Degraded")["status"] == "False"
    assert plan.status["heldBookieReplicas"] == 3
    assert plan.status["components"]["bookkeeper"]["desiredReplicas"] == 3


def test_a_lower_bookie_count_with_decommission_disabled_is_held_and_degraded(example: Example) -> None:
    body = cluster(example, bookkeeper__replicas=2)
    body["spec"]["decommission"] = {"enabled": False}
    observed = {naming.BOOKIE: ObservedSet(spec_replicas=3, replicas=3, ready_replicas=3)}
    plan = cluster_reconcile.reconcile(body, observed, NOW)
    assert by(plan.objects, "StatefulSet", "pulsar-mini-bookie")["spec"]["replicas"] == 3
    degraded = condition(plan.status, "Degraded")
    assert (degraded["status"], degraded["reason"]) == ("True", "DecommissionDisabled")
    assert "spec.bookkeeper.replicas=2" in degraded["message"]


@pytest.mark.parametrize(("wanted", "current", "applied"), [(4, 3, 4), (3, 3, 3), (3, None, 3)])
def test_bookie_scale_up_and_first_creation_are_not_held(example: Example, wanted: int, current: int | None,
                                                          applied: int) -> None:
    observed = {naming.BOOKIE: ObservedSet(current, current or 0, 0)} if current else {}
    plan = cluster_reconcile.reconcile(cluster(example, bookkeeper__replicas=wanted), observed, NOW)
    assert by(plan.objects, "StatefulSet", "pulsar-mini-bookie")["spec"]["replicas"] == applied
    assert condition(plan.status, "Degraded")["status"] == "False"
    assert plan.status["heldBookieReplicas"] is None


def test_status_reports_replicas_urls_and_readiness(example: Example) -> None:
    body = cluster(example)
    first = cluster_reconcile.reconcile(body, {}, NOW)
    assert condition(first.status, "Ready")["status"] == "False"
    assert condition(first.status, "Progressing")["status"] == "True"
    assert "broker 0/2 ready" in condition(first.status, "Progressing")["message"]
    assert first.status["brokerServiceURL"] == "pulsar://pulsar-mini-proxy.pulsar.svc:6650"
    assert first.status["webServiceURL"] == "http://pulsar-mini-broker.pulsar.svc:8080"
    body["status"] = first.status
    ready = cluster_reconcile.reconcile(body, ready_sets(first.objects), LATER)
    assert condition(ready.status, "Ready")["status"] == "True"
    assert condition(ready.status, "Ready")["lastTransitionTime"] == LATER
    assert condition(ready.status, "Degraded")["lastTransitionTime"] == NOW  # unchanged status keeps its time
    assert ready.status["components"]["broker"] == {
        "replicas": 2, "readyReplicas": 2, "desiredReplicas": 2,
        "selector": "app.kubernetes.io/component=broker,app.kubernetes.io/instance=pulsar-mini,"
                    "app.kubernetes.io/name=pulsar"}


def test_a_functions_worker_runs_over_the_cluster_metadata_store_and_brokers(example: Example) -> None:
    body = cluster(example, functionsWorker={"enabled": True, "replicas": 2,
                                             "config": {"maxPackageSizeBytes": "4194304"}})
    plan = cluster_reconcile.reconcile(body, {}, NOW)
    conf = by(plan.objects, "ConfigMap", "pulsar-mini-functions-worker")["data"]["functions_worker.conf"]
    lines = set(conf.splitlines())
    assert {"configurationMetadataStoreUrl=etcd:http://pulsar-mini-etcd.pulsar.svc:2379",
            "pulsarServiceUrl=pulsar://pulsar-mini-broker.pulsar.svc:6650",
            "pulsarWebServiceUrl=http://pulsar-mini-broker.pulsar.svc:8080",
            "pulsarFunctionsCluster=pulsar-mini", "workerPort=6750",
            "downloadDirectory=/pulsar/data/functions", "maxPackageSizeBytes=4194304"} <= lines
    sts = by(plan.objects, "StatefulSet", "pulsar-mini-functions-worker")
    assert sts["spec"]["replicas"] == 2
    assert sts["spec"]["serviceName"] == "pulsar-mini-functions-worker-headless"
    pod = sts["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert container["command"] == [
        "pulsar", "functions-worker", "--config", "/pulsar/conf/functions_worker.conf",
        "--conf", "workerId=$(POD_NAME)",
        "--conf", "workerHostname=$(POD_NAME).pulsar-mini-functions-worker-headless.pulsar.svc",
        "--conf", "bindAddress=$(POD_IP)"]
    assert container["readinessProbe"]["httpGet"] == {"path": "/status.html", "port": 6750}
    assert {"name": "functions", "emptyDir": {}} in pod["volumes"]
    assert {"name": "functions", "mountPath": "/pulsar/data/functions"} in container["volumeMounts"]
    service = by(plan.objects, "Service", "pulsar-mini-functions-worker")
    assert [p["port"] for p in service["spec"]["ports"]] == [6750]


def test_a_functions_worker_is_a_component_whose_readiness_counts(example: Example) -> None:
    body = cluster(example, functionsWorker={"enabled": True, "replicas": 2})
    first = cluster_reconcile.reconcile(body, {}, NOW)
    assert "functions-worker 0/2 ready" in condition(first.status, "Progressing")["message"]
    assert "FunctionsWorkerAvailable" not in {c["type"] for c in first.status["conditions"]}
    body["status"] = first.status
    observed = ready_sets(first.objects)
    observed["functions-worker"] = ObservedSet(spec_replicas=2, replicas=2, ready_replicas=1)
    waiting = cluster_reconcile.reconcile(body, observed, LATER)
    assert condition(waiting.status, "Ready")["status"] == "False"
    assert waiting.status["components"]["functionsWorker"]["readyReplicas"] == 1
    ready = cluster_reconcile.reconcile(body, ready_sets(first.objects), LATER)
    assert condition(ready.status, "Ready")["status"] == "True"
    assert ready.status["components"]["functionsWorker"]["desiredReplicas"] == 2
    assert cluster_reconcile.reconcile(cluster(example), {}, NOW).status["components"]["functionsWorker"] is None


def test_without_a_proxy_clients_use_the_brokers(example: Example) -> None:
    plan = cluster_reconcile.reconcile(cluster(example, proxy__enabled=False), {}, NOW)
    assert plan.status["brokerServiceURL"] == "pulsar://pulsar-mini-broker.pulsar.svc:6650"
    assert plan.status["components"]["proxy"] is None


def test_cluster_metadata_is_initialised_once_when_a_broker_is_ready(example: Example) -> None:
    body = cluster(example)
    assert cluster_reconcile.reconcile(body, {}, NOW).admin_calls == ()
    broker_ready = {naming.BROKER: ObservedSet(2, 2, 1)}
    calls = cluster_reconcile.reconcile(body, broker_ready, NOW).admin_calls
    assert [(c.method, c.path) for c in calls] == [
        ("PUT", "/admin/v2/clusters/pulsar-mini"), ("PUT", "/admin/v2/tenants/public"),
        ("PUT", "/admin/v2/namespaces/public/default")]
    assert calls[0].body == {"serviceUrl": "http://pulsar-mini-broker.pulsar.svc:8080",
                             "brokerServiceUrl": "pulsar://pulsar-mini-broker.pulsar.svc:6650"}
    assert all(409 in c.ok_statuses for c in calls)
    body["status"] = {"metadataInitialized": True}
    assert cluster_reconcile.reconcile(body, broker_ready, NOW).admin_calls == ()


def test_external_etcd_is_the_metadata_store(example: Example) -> None:
    body = cluster(example, etcd={"externalEndpoints": ["http://e1:2379", "http://e2:2379"]})
    conf = by(cluster_reconcile.reconcile(body, {}, NOW).objects, "ConfigMap", "pulsar-mini-broker")["data"]["broker.conf"]
    assert "metadataStoreUrl=etcd:http://e1:2379,http://e2:2379" in conf
    assert cluster_config.metadata_store_url(cluster_reconcile.cluster_spec.parse(body)) == "etcd:http://e1:2379,http://e2:2379"


class MemoryStore:
    """A deliberately simple API server: stores objects, adds server-side defaults, counts writes."""

    def __init__(self) -> None:
        self.objects: dict[ObjectRef, dict[str, Any]] = {}
        self.writes = 0

    async def get(self, ref: ObjectRef) -> dict[str, Any] | None:
        return copy.deepcopy(self.objects.get(ref))

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        self.writes += 1
        stored = copy.deepcopy(obj)
        stored["metadata"].update(uid="x", resourceVersion="1", creationTimestamp=NOW)
        stored["status"] = {"observedGeneration": 1}
        if obj["kind"] == "StatefulSet":
            stored["spec"]["revisionHistoryLimit"] = 10
            for container in stored["spec"]["template"]["spec"]["containers"]:
                container["terminationMessagePath"] = "/dev/termination-log"
                for port in container["ports"]:
                    port.setdefault("protocol", "TCP")
        if obj["kind"] == "Service" and obj["spec"].get("clusterIP") != "None":
            stored["spec"]["clusterIP"] = "10.0.0.1"
        self.objects[ObjectRef.of(obj)] = stored
        return stored

    async def patch(self, ref: ObjectRef, patch: dict[str, Any]) -> dict[str, Any]:
        self.writes += 1

        def merge(target: dict[str, Any], change: dict[str, Any]) -> None:
            for key, value in change.items():
                if value is None:
                    target.pop(key, None)
                elif isinstance(value, dict) and isinstance(target.get(key), dict):
                    merge(target[key], value)
                else:
                    target[key] = copy.deepcopy(value)

        merge(self.objects[ref], patch)
        return self.objects[ref]

    async def delete(self, ref: ObjectRef) -> bool:
        self.writes += 1
        return self.objects.pop(ref, None) is not None


async def test_reconciling_again_plans_no_change(example: Example) -> None:
    store = MemoryStore()
    body = cluster(example)
    plan = cluster_reconcile.reconcile(body, {}, NOW)
    first = await applier.apply(store, plan.objects, plan.deletions)
    assert len(first.created) == len(plan.objects)
    writes = store.writes
    again = cluster_reconcile.reconcile(body, {}, NOW)
    result = await applier.apply(store, again.objects, again.deletions)
    assert not result.changed and store.writes == writes
    assert len(result.unchanged) == len(plan.objects)


async def test_a_replica_change_patches_only_the_statefulset(example: Example) -> None:
    store = MemoryStore()
    plan = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    await applier.apply(store, plan.objects, plan.deletions)
    scaled = cluster_reconcile.reconcile(cluster(example, broker__replicas=5), {}, NOW)
    result = await applier.apply(store, scaled.objects, scaled.deletions)
    assert [(r.kind, r.name) for r in result.patched] == [("StatefulSet", "pulsar-mini-broker")]
    assert store.objects[result.patched[0]]["spec"]["replicas"] == 5


async def test_disabling_the_proxy_deletes_its_objects(example: Example) -> None:
    store = MemoryStore()
    plan = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    await applier.apply(store, plan.objects, plan.deletions)
    off = cluster_reconcile.reconcile(cluster(example, proxy__enabled=False), {}, NOW)
    result = await applier.apply(store, off.objects, off.deletions)
    assert {(r.kind, r.name) for r in result.deleted} == PROXY
    assert not any("proxy" in ref.name for ref in store.objects)


async def test_a_create_that_lost_a_race_patches_the_winner(example: Example) -> None:
    from pulsar_operator import errors

    class RacingStore(MemoryStore):
        """Another reconcile creates each object between our read and our create."""

        async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
            if ObjectRef.of(obj) not in self.objects:
                other = copy.deepcopy(obj)
                other["metadata"]["labels"] = {}
                await super().create(other)
                raise errors.KubeApiError("POST", "/x", 409, "AlreadyExists")
            return await super().create(obj)

        async def get(self, ref: ObjectRef) -> dict[str, Any] | None:
            self.reads = getattr(self, "reads", 0) + 1
            return None if self.reads == 1 else await super().get(ref)

    store = RacingStore()
    plan = cluster_reconcile.reconcile(cluster(example), {}, NOW)
    result = await applier.apply(store, plan.objects[:1])
    assert [r.name for r in result.patched] == ["pulsar-mini-etcd"]
    assert store.objects[result.patched[0]]["metadata"]["labels"] == plan.objects[0]["metadata"]["labels"]


def test_a_changed_etcd_member_count_is_left_to_the_membership_loop(example: Example) -> None:
    body = cluster(example, etcd__replicas=3)
    live = ("etcd", "--initial-cluster", "pulsar-mini-etcd-0=http://x:2380,pulsar-mini-etcd-1=http://y:2380",
            "--initial-cluster-state", "existing")
    observed = {naming.ETCD: ObservedSet(spec_replicas=2, replicas=2, ready_replicas=2, command=live)}
    plan = cluster_reconcile.reconcile(body, observed, NOW)
    etcd = by(plan.objects, "StatefulSet", "pulsar-mini-etcd")
    assert etcd["spec"]["replicas"] == 2
    assert etcd["spec"]["updateStrategy"] == {"type": "OnDelete"}
    command = etcd["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--initial-cluster") + 1] == live[2]
    assert command[command.index("--initial-cluster-state") + 1] == "existing"
    created = cluster_reconcile.reconcile(body, {}, NOW)
    etcd = by(created.objects, "StatefulSet", "pulsar-mini-etcd")
    assert etcd["spec"]["replicas"] == 3
    command = etcd["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--initial-cluster-state") + 1] == "new"
