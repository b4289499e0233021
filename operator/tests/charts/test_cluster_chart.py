"""The pulsar-cluster chart: values become a PulsarCluster (and Tenants, PulsarNamespaces) the CRDs accept."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml
from pulsar_operator import cluster_reconcile

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "pulsar-cluster"
SAMPLE_VALUES = sorted((CHART / "ci").glob("*.yaml"))
EXAMPLE_CLUSTER = REPO / "examples" / "pulsar-cluster.yaml"
NOW = "2026-01-01T00:00:00Z"
CLUSTER_KEY = ("pulsar.pulsar-py.dev/v1alpha1", "PulsarCluster")


def sample(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((CHART / "ci" / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def of_kind(manifests: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] == kind]


def the_cluster(manifests: list[dict[str, Any]]) -> dict[str, Any]:
    clusters = of_kind(manifests, "PulsarCluster")
    assert len(clusters) == 1, f"expected one PulsarCluster, got {len(clusters)}"
    return clusters[0]


def operator_plan(cluster: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects the operator creates for a rendered PulsarCluster."""
    cluster = copy.deepcopy(cluster)
    cluster["metadata"].update(uid="uid", generation=1)
    return list(cluster_reconcile.reconcile(cluster, {}, NOW).objects)


def planned(plan: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [m for m in plan if m["kind"] == kind and m["metadata"]["name"] == name]
    return found


def leaf_paths(schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Paths of the fields a schema declares, stopping at free-form maps and objects."""
    properties = schema.get("properties")
    if not properties or schema.get("x-kubernetes-preserve-unknown-fields"):
        return {prefix}
    paths: set[str] = set()
    for name, child in properties.items():
        paths |= leaf_paths(child, f"{prefix}.{name}" if prefix else name)
    return paths


def present_paths(value: Any, schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Paths of `value` that match declared leaf fields of `schema`."""
    properties = schema.get("properties")
    if not properties or schema.get("x-kubernetes-preserve-unknown-fields"):
        return {prefix}
    paths: set[str] = set()
    for name, child in (value or {}).items():
        if name in properties:
            paths |= present_paths(child, properties[name], f"{prefix}.{name}" if prefix else name)
    return paths


def with_defaults(value: Any, schema: dict[str, Any]) -> Any:
    """`value` as the operator sees it: absent fields take the CRD default, absent objects are empty."""
    properties = schema.get("properties")
    if not properties or not isinstance(value, dict):
        return value
    result = copy.deepcopy(value)
    for name, child in properties.items():
        if name not in result:
            if "default" in child:
                result[name] = copy.deepcopy(child["default"])
            elif child.get("type") == "object" and "properties" in child:
                result[name] = {}
            else:
                continue
        result[name] = with_defaults(result[name], child)
    return result


def test_default_values_render_one_valid_pulsar_cluster(
    render_chart: Any, validate_manifests: Any
) -> None:
    manifests = render_chart(CHART, release="my-pulsar")
    assert [m["kind"] for m in manifests] == ["PulsarCluster"]
    cluster = the_cluster(manifests)
    assert cluster["metadata"]["name"] == "my-pulsar"
    assert cluster["metadata"]["namespace"] == "pulsar"
    assert cluster["spec"]["image"] == "pulsar-py:0.1.0"
    validate_manifests(manifests)


@pytest.mark.parametrize("values_file", SAMPLE_VALUES, ids=lambda p: p.name)
def test_sample_values_render_resources_the_crds_accept(
    values_file: Path, render_chart: Any, validate_manifests: Any
) -> None:
    manifests = render_chart(CHART, yaml.safe_load(values_file.read_text()))
    the_cluster(manifests)
    validate_manifests(manifests)


def test_every_pulsar_cluster_spec_field_is_reachable_from_values(
    render_chart: Any, crd_types: Any
) -> None:
    spec_schema = crd_types[CLUSTER_KEY].schema["properties"]["spec"]
    reached: set[str] = set()
    for values_file in SAMPLE_VALUES:
        cluster = the_cluster(render_chart(CHART, yaml.safe_load(values_file.read_text())))
        reached |= present_paths(cluster["spec"], spec_schema)
    unreached = leaf_paths(spec_schema) - reached
    assert unreached == set(), "add these CRD fields to the chart (and a ci/ sample)"


def test_pulsar_mini_values_give_the_same_spec_as_the_example_manifest(
    render_chart: Any, crd_types: Any
) -> None:
    spec_schema = crd_types[CLUSTER_KEY].schema["properties"]["spec"]
    example = yaml.safe_load(EXAMPLE_CLUSTER.read_text())
    cluster = the_cluster(render_chart(CHART, sample("pulsar-mini-values.yaml")))
    assert cluster["metadata"]["name"] == example["metadata"]["name"]
    assert with_defaults(cluster["spec"], spec_schema) == with_defaults(example["spec"], spec_schema)


def test_config_overrides_are_written_as_strings(render_chart: Any) -> None:
    spec = the_cluster(render_chart(CHART, sample("full-values.yaml")))["spec"]
    assert spec["broker"]["config"]["managedLedgerDefaultEnsembleSize"] == "3"
    assert spec["bookkeeper"]["config"]["journalSyncData"] == "true"
    assert spec["proxy"]["config"]["maxConcurrentLookupRequests"] == "50000"
    assert spec["functionsWorker"]["config"]["maxPackageSizeBytes"] == "10485760"


def test_config_override_numbers_keep_their_digits(render_chart: Any) -> None:
    config = {"maxMessageSize": 5242880, "managedLedgerCacheEvictionWatermark": 0.9,
              "brokerDeleteInactiveTopicsEnabled": False, "managedLedgerMaxEntriesPerLedger": "50000"}
    spec = the_cluster(render_chart(CHART, {"broker": {"replicas": 1, "config": config}}))["spec"]
    assert spec["broker"]["config"] == {
        "maxMessageSize": "5242880", "managedLedgerCacheEvictionWatermark": "0.9",
        "brokerDeleteInactiveTopicsEnabled": "false", "managedLedgerMaxEntriesPerLedger": "50000",
    }


def test_empty_values_leave_fields_to_the_crd_defaults(render_chart: Any) -> None:
    spec = the_cluster(render_chart(CHART))["spec"]
    assert "clusterName" not in spec
    assert "externalEndpoints" not in spec["etcd"]
    assert "storageClassName" not in spec["bookkeeper"]["journal"]
    assert "config" not in spec["broker"] and "resources" not in spec["broker"]
    assert spec["functionsWorker"] == {"enabled": False, "replicas": 1}
    assert set(spec["podPolicy"]) == {"securityContext"}


def test_tenants_and_namespaces_point_at_the_release_cluster(render_chart: Any) -> None:
    manifests = render_chart(CHART, sample("full-values.yaml"))
    tenants = {t["metadata"]["name"]: t["spec"] for t in of_kind(manifests, "Tenant")}
    assert set(tenants) == {"payments-tenant", "analytics-team"}
    assert tenants["analytics-team"]["name"] == "Analytics_Team"
    assert tenants["payments-tenant"]["lifecyclePolicy"] == "KeepAfterDeletion"
    namespaces = {n["metadata"]["name"]: n["spec"] for n in of_kind(manifests, "PulsarNamespace")}
    assert set(namespaces) == {"payments-ledger", "analytics-team-events-raw"}
    raw = namespaces["analytics-team-events-raw"]
    assert (raw["tenant"], raw["name"]) == ("Analytics_Team", "events.raw")
    assert namespaces["payments-ledger"]["persistence"]["bookkeeperAckQuorum"] == 2
    for spec in [*tenants.values(), *namespaces.values()]:
        assert spec["clusterRef"] == {"name": "prod"}


def test_keep_on_uninstall_marks_only_the_cluster_with_the_keep_policy(render_chart: Any) -> None:
    manifests = render_chart(CHART, sample("full-values.yaml"))
    annotations = the_cluster(manifests)["metadata"]["annotations"]
    assert annotations["helm.sh/resource-policy"] == "keep"
    assert annotations["example.com/owner"] == "streaming-team"
    for tenant in of_kind(manifests, "Tenant"):
        assert "helm.sh/resource-policy" not in tenant["metadata"]["annotations"]


def test_functions_worker_values_become_the_workers_the_operator_runs(render_chart: Any) -> None:
    plan = operator_plan(the_cluster(render_chart(CHART, sample("full-values.yaml"))))
    workers = planned(plan, "StatefulSet", "prod-functions-worker")
    assert workers["spec"]["replicas"] == 2
    (container,) = workers["spec"]["template"]["spec"]["containers"]
    assert container["command"][:2] == ["pulsar", "functions-worker"]
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"memory": "2Gi"}}
    conf = planned(plan, "ConfigMap", "prod-functions-worker")["data"]["functions_worker.conf"]
    assert "maxPackageSizeBytes=10485760" in conf.splitlines()
    assert "pulsarFunctionsCluster=prod-eu-1" in conf.splitlines()


def test_no_functions_worker_runs_unless_enabled(render_chart: Any) -> None:
    plan = operator_plan(the_cluster(render_chart(CHART, sample("pulsar-mini-values.yaml"))))
    assert not [m for m in plan if "functions-worker" in m["metadata"]["name"]]


def test_notes_say_where_pulsar_admin_reaches_the_functions_workers() -> None:
    values = {"functionsWorker": {"enabled": True, "replicas": 3}}
    with helm_python.Chart.load(CHART) as chart:
        notes = chart.render(values, name="rel", namespace="pulsar")["pulsar-cluster/templates/NOTES.txt"]
    assert "broker, proxy, functions worker StatefulSets" in notes
    assert "pulsar-admin --admin-url http://rel-broker.pulsar.svc:8080 functions create" in notes
    with helm_python.Chart.load(CHART) as chart:
        notes = chart.render({}, name="rel", namespace="pulsar")["pulsar-cluster/templates/NOTES.txt"]
    assert "functions" not in notes


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"bookkeeper": {"replicas": "three"}}, "/bookkeeper/replicas"),
        ({"etcd": {"replicas": 2}}, "/etcd/replicas"),
        ({"proxy": {"serviceType": "Ingress"}}, "/proxy/serviceType"),
        ({"brokers": {"replicas": 2}}, "brokers"),
        ({"functionsWorker": {"replicas": -1}}, "/functionsWorker/replicas"),
        ({"functionsWorker": {"enabled": "yes"}}, "/functionsWorker/enabled"),
        ({"functionsWorker": {"runtime": "kubernetes"}}, "runtime"),
        ({"namespaces": [{"name": "orders"}]}, "tenant"),
        ({"tenants": [{"name": "acme", "lifecyclePolicy": "Delete"}]}, "lifecyclePolicy"),
    ],
)
def test_values_schema_rejects_bad_values(values: dict[str, Any], where: str) -> None:
    with helm_python.Chart.load(CHART) as chart, pytest.raises(helm_python.HelmValuesError, match=where):
        chart.render(values, name="test", namespace="pulsar")


@pytest.mark.parametrize(
    ("broker_config", "bookies", "message"),
    [
        ({"managedLedgerDefaultEnsembleSize": 4}, 3, "EnsembleSize \\(4\\) must not exceed bookkeeper.replicas"),
        (
            {"managedLedgerDefaultEnsembleSize": 2, "managedLedgerDefaultWriteQuorum": 3},
            3,
            "WriteQuorum \\(3\\) must not exceed managedLedgerDefaultEnsembleSize",
        ),
        (
            {"managedLedgerDefaultWriteQuorum": "2", "managedLedgerDefaultAckQuorum": "3"},
            3,
            "AckQuorum \\(3\\) must not exceed managedLedgerDefaultWriteQuorum",
        ),
    ],
)
def test_replication_settings_the_bookies_cannot_satisfy_refuse_to_render(
    broker_config: dict[str, Any], bookies: int, message: str
) -> None:
    values = {"broker": {"replicas": 1, "config": broker_config}, "bookkeeper": {"replicas": bookies}}
    with helm_python.Chart.load(CHART) as chart, pytest.raises(helm_python.HelmRenderError, match=message):
        chart.render(values, name="test", namespace="pulsar")


def test_chart_passes_helm_lint_in_strict_mode() -> None:
    report = helm_python.lint(CHART, strict=True, namespace="pulsar")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [] and report["errors"] == [], report
