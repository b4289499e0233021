"""The pulsar-operator chart: renders valid objects, ships the CRDs, grants just enough RBAC."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

CHART = Path(__file__).resolve().parents[3] / "charts" / "pulsar-operator"
TOP_LEVEL_CRDS = CHART.parents[1] / "crds"
SAMPLE_VALUES = sorted((CHART / "ci").glob("*.yaml"))

ALL_VERBS_ON_OWNED = {"get", "list", "watch", "create", "patch", "update", "delete"}

#: What the operator does with built-in kinds in a watched namespace:
#: (apiGroup, resource) -> verbs it needs.
OPERATOR_USES: dict[tuple[str, str], set[str]] = {
    ("apps", "statefulsets"): ALL_VERBS_ON_OWNED,
    ("", "services"): ALL_VERBS_ON_OWNED,
    ("", "configmaps"): ALL_VERBS_ON_OWNED,
    ("policy", "poddisruptionbudgets"): ALL_VERBS_ON_OWNED,
    ("autoscaling", "horizontalpodautoscalers"): ALL_VERBS_ON_OWNED,
    ("", "pods"): {"get", "list", "watch"},
    ("", "persistentvolumeclaims"): {"get", "list", "delete"},
    ("", "events"): {"create"},
}

#: What kopf reads cluster-wide to discover resources and namespaces.
KOPF_SCANNING: dict[tuple[str, str], set[str]] = {
    ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},
    ("", "namespaces"): {"list", "watch"},
}

READ_VERBS = {"get", "list", "watch"}


def custom_resource_needs() -> dict[tuple[str, str], set[str]]:
    """Permissions on every custom resource of crds/: kopf watches, patches and finalizes them."""
    needs: dict[tuple[str, str], set[str]] = {}
    for path in sorted(TOP_LEVEL_CRDS.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not doc or doc.get("kind") != "CustomResourceDefinition":
                continue
            group, plural = doc["spec"]["group"], doc["spec"]["names"]["plural"]
            needs[(group, plural)] = {"get", "list", "watch", "patch", "update"}
            needs[(group, f"{plural}/status")] = {"patch"}
            # blockOwnerDeletion on owned objects needs update on the owner's finalizers.
            needs[(group, f"{plural}/finalizers")] = {"update"}
    return needs


def by_kind(manifests: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in manifests if m["kind"] == kind]


def one(manifests: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = by_kind(manifests, kind)
    assert len(found) == 1, f"expected one {kind}, got {len(found)}"
    return found[0]


def missing_grants(
    rules: list[dict[str, Any]], needs: dict[tuple[str, str], set[str]]
) -> list[str]:
    """Each (group, resource, verb) of `needs` that no rule grants."""
    missing = []
    for (group, resource), verbs in sorted(needs.items()):
        for verb in sorted(verbs):
            if not any(
                group in rule.get("apiGroups", [])
                and resource in rule.get("resources", [])
                and verb in rule.get("verbs", [])
                for rule in rules
            ):
                missing.append(f"{verb} {group or 'core'}/{resource}")
    return missing


def bound_rules(
    manifests: list[dict[str, Any]], service_account: dict[str, Any], *, namespace: str | None
) -> list[dict[str, Any]]:
    """The rules bound to the ServiceAccount: by ClusterRoleBindings, plus RoleBindings in `namespace`."""
    sa = (service_account["metadata"]["name"], service_account["metadata"]["namespace"])
    roles = {
        (m["kind"], m["metadata"].get("namespace"), m["metadata"]["name"]): m
        for m in manifests
        if m["kind"] in ("Role", "ClusterRole")
    }
    rules: list[dict[str, Any]] = []
    for binding in manifests:
        if binding["kind"] == "ClusterRoleBinding":
            scope = None
        elif binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] == namespace:
            scope = namespace
        else:
            continue
        subjects = {(s["name"], s.get("namespace")) for s in binding["subjects"]}
        if sa not in subjects:
            continue
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], scope if ref["kind"] == "Role" else None, ref["name"]))
        assert role is not None, f"{binding['kind']} {binding['metadata']['name']} names a missing {ref}"
        rules.extend(role["rules"])
    return rules


def test_top_level_crds_exist() -> None:
    assert sorted(TOP_LEVEL_CRDS.glob("*.yaml")), "crds/ holds no CRD files"


def test_chart_crds_are_byte_identical_copies_of_top_level_crds() -> None:
    top = {p.name: p.read_bytes() for p in TOP_LEVEL_CRDS.glob("*.yaml")}
    chart = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*.yaml")}
    assert sorted(chart) == sorted(top), "charts/pulsar-operator/crds/ and crds/ list different files"
    differing = [name for name in top if top[name] != chart[name]]
    assert not differing, f"copy crds/ into the chart again, these differ: {differing}"


def test_helm_loads_the_crds_and_they_validate_as_apiextensions_v1(validate_manifests: Any) -> None:
    with helm_python.Chart.load(CHART) as chart:
        crd_files = chart.crds
    assert crd_files, "Helm found no CRDs in the chart"
    docs = [d for f in crd_files for d in yaml.safe_load_all(f["data"]) if d]
    assert all(d["apiVersion"] == "apiextensions.k8s.io/v1" for d in docs)
    validate_manifests(docs)


def test_default_values_render_valid_kubernetes_objects(
    render_chart: Any, validate_manifests: Any
) -> None:
    manifests = render_chart(CHART)
    assert {m["kind"] for m in manifests} >= {"Deployment", "ServiceAccount", "Role", "RoleBinding"}
    validate_manifests(manifests)


@pytest.mark.parametrize("values_file", SAMPLE_VALUES, ids=lambda p: p.name)
def test_sample_values_render_valid_kubernetes_objects(
    values_file: Path, render_chart: Any, validate_manifests: Any
) -> None:
    manifests = render_chart(CHART, yaml.safe_load(values_file.read_text()))
    assert one(manifests, "Deployment")
    validate_manifests(manifests)


def operator_args(manifests: list[dict[str, Any]]) -> list[str]:
    container = one(manifests, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["pulsar"]
    args: list[str] = container["args"]
    assert args[0] == "operator"
    return args[1:]


def namespace_flags(args: list[str]) -> list[str]:
    return [a.split("=", 1)[1] for a in args if a.startswith("--namespace=")]


def test_operator_runs_one_replica_of_pulsar_operator_watching_the_release_namespace(
    render_chart: Any,
) -> None:
    manifests = render_chart(CHART, namespace="streaming")
    assert one(manifests, "Deployment")["spec"]["replicas"] == 1
    args = operator_args(manifests)
    assert namespace_flags(args) == ["streaming"]
    assert "--all-namespaces" not in args
    assert "--lease-namespace=streaming" in args and "--no-leader-election" not in args


def test_function_instances_default_to_the_operator_image_or_function_image(render_chart: Any) -> None:
    def function_image(values: dict[str, Any]) -> str:
        container = one(render_chart(CHART, values), "Deployment")["spec"]["template"]["spec"]["containers"][0]
        return str(next(e["value"] for e in container["env"] if e["name"] == "PULSAR_IMAGE"))

    operator_image = one(render_chart(CHART), "Deployment")["spec"]["template"]["spec"]["containers"][0]["image"]
    assert function_image({}) == operator_image
    assert function_image({"functionImage": "registry.example/functions:1"}) == "registry.example/functions:1"


def test_liveness_probe_targets_kopf_health_endpoint(render_chart: Any) -> None:
    container = one(render_chart(CHART), "Deployment")["spec"]["template"]["spec"]["containers"][0]
    probe = container["livenessProbe"]["httpGet"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert probe["path"] == "/healthz"
    assert ports[probe["port"]] == 8080


def test_operator_pod_runs_as_non_root_with_read_only_root(render_chart: Any) -> None:
    pod = one(render_chart(CHART), "Deployment")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    container = pod["containers"][0]["securityContext"]
    assert container["readOnlyRootFilesystem"] is True
    assert container["allowPrivilegeEscalation"] is False
    assert container["capabilities"]["drop"] == ["ALL"]


def test_namespaced_rbac_grants_what_the_operator_uses_in_each_watched_namespace(
    render_chart: Any,
) -> None:
    values = {"watch": {"allNamespaces": False, "namespaces": ["team-a", "team-b"]}}
    manifests = render_chart(CHART, values, namespace="operators")
    sa = one(manifests, "ServiceAccount")
    assert namespace_flags(operator_args(manifests)) == ["team-a", "team-b"]
    workload_roles = [r for r in by_kind(manifests, "Role") if r["metadata"]["name"] == "test-pulsar-operator"]
    assert sorted(r["metadata"]["namespace"] for r in workload_roles) == ["team-a", "team-b"]
    needs = {**OPERATOR_USES, **custom_resource_needs()}
    for namespace in ("team-a", "team-b"):
        rules = bound_rules(manifests, sa, namespace=namespace)
        assert missing_grants(rules, needs) == [], namespace
        assert missing_grants(rules, KOPF_SCANNING) == []
    # Nothing at all in a namespace that is not watched, beyond cluster-wide reads.
    elsewhere = bound_rules(manifests, sa, namespace="operators")
    assert missing_grants(elsewhere, {("apps", "statefulsets"): {"get"}}) != []


def test_namespaced_mode_has_only_read_only_cluster_roles(render_chart: Any) -> None:
    manifests = render_chart(CHART)
    cluster_roles = by_kind(manifests, "ClusterRole")
    assert cluster_roles, "kopf's read-only scanning ClusterRole is expected by default"
    for role in cluster_roles:
        for rule in role["rules"]:
            assert set(rule["verbs"]) <= READ_VERBS, rule


def test_cluster_scanning_can_be_turned_off_leaving_no_cluster_wide_rbac(render_chart: Any) -> None:
    manifests = render_chart(CHART, {"rbac": {"clusterScanning": False}})
    assert by_kind(manifests, "ClusterRole") == []
    assert by_kind(manifests, "ClusterRoleBinding") == []


def test_all_namespaces_mode_uses_a_cluster_role_and_the_all_namespaces_flag(
    render_chart: Any,
) -> None:
    manifests = render_chart(CHART, {"watch": {"allNamespaces": True, "namespaces": []}})
    args = operator_args(manifests)
    assert "--all-namespaces" in args and namespace_flags(args) == []
    # The only Role left is the one for the Lease.
    assert [r["metadata"]["name"] for r in by_kind(manifests, "Role")] == ["test-pulsar-operator-leader-election"]
    rules = bound_rules(manifests, one(manifests, "ServiceAccount"), namespace=None)
    needs = {**OPERATOR_USES, **custom_resource_needs(), **KOPF_SCANNING}
    assert missing_grants(rules, needs) == []


@pytest.mark.parametrize("all_namespaces", [False, True])
def test_leader_election_may_create_leases_and_renew_only_its_own(
    render_chart: Any, all_namespaces: bool
) -> None:
    values = {
        "watch": {"allNamespaces": all_namespaces, "namespaces": ["team-a"] if not all_namespaces else []},
        "leaderElection": {"enabled": True, "leaseName": "pulsar-op-lease"},
    }
    manifests = render_chart(CHART, values, namespace="operators")
    args = operator_args(manifests)
    assert "--lease-name=pulsar-op-lease" in args and "--lease-namespace=operators" in args
    rules = bound_rules(manifests, one(manifests, "ServiceAccount"), namespace="operators")
    lease_rules = [r for r in rules if "leases" in r["resources"]]
    assert missing_grants(lease_rules, {("coordination.k8s.io", "leases"): {"create", "get", "patch"}}) == []
    for rule in lease_rules:
        if set(rule["verbs"]) - {"create"}:
            assert rule["resourceNames"] == ["pulsar-op-lease"], rule
    # No Lease rights outside the release namespace.
    elsewhere = bound_rules(manifests, one(manifests, "ServiceAccount"), namespace="team-a")
    assert [r for r in elsewhere if "leases" in r["resources"]] == []


def test_without_leader_election_there_is_no_lease_role_and_the_flag_says_so(
    render_chart: Any,
) -> None:
    manifests = render_chart(CHART, {"leaderElection": {"enabled": False, "leaseName": "x"}})
    assert "--no-leader-election" in operator_args(manifests)
    assert all("leases" not in rule["resources"] for m in manifests for rule in m.get("rules", []))
    assert one(manifests, "Deployment")["spec"]["strategy"]["type"] == "Recreate"


def test_several_replicas_without_leader_election_refuse_to_render() -> None:
    values = {"replicaCount": 2, "leaderElection": {"enabled": False, "leaseName": "x"}}
    with helm_python.Chart.load(CHART) as chart, pytest.raises(helm_python.HelmRenderError, match="leaderElection"):
        chart.render(values, name="test", namespace="pulsar")


def test_function_mesh_off_passes_the_flag_and_drops_its_rbac(render_chart: Any) -> None:
    manifests = render_chart(CHART, {"functionMesh": {"enabled": False}})
    assert "--no-function-mesh" in operator_args(manifests)
    groups = {g for m in manifests for rule in m.get("rules", []) for g in rule["apiGroups"]}
    assert "compute.functionmesh.io" not in groups
    assert "pulsar.pulsar-py.dev" in groups


def test_rbac_never_uses_wildcards_or_touches_secrets(render_chart: Any) -> None:
    for values in ({}, {"watch": {"allNamespaces": True, "namespaces": []}}):
        for role in render_chart(CHART, values):
            for rule in role.get("rules", []):
                for field in ("apiGroups", "resources", "verbs"):
                    assert "*" not in rule.get(field, []), rule
                assert "secrets" not in rule.get("resources", []), rule


def test_values_schema_rejects_replica_count_given_as_words() -> None:
    with helm_python.Chart.load(CHART) as chart, pytest.raises(helm_python.HelmValuesError, match="replicaCount"):
        chart.render({"replicaCount": "three"}, name="test", namespace="pulsar")


def test_values_schema_rejects_a_misspelt_key() -> None:
    with helm_python.Chart.load(CHART) as chart, pytest.raises(helm_python.HelmValuesError, match="watchNamespace"):
        chart.render({"watchNamespace": ["a"]}, name="test", namespace="pulsar")


def test_values_schema_rejects_an_invalid_namespace_name() -> None:
    with helm_python.Chart.load(CHART) as chart, pytest.raises(helm_python.HelmValuesError):
        chart.render(
            {"watch": {"allNamespaces": False, "namespaces": ["Team_A"]}},
            name="test",
            namespace="pulsar",
        )


def test_chart_passes_helm_lint_in_strict_mode() -> None:
    report = helm_python.lint(CHART, strict=True, namespace="pulsar")
    problems = [m for m in report["messages"] if m["severity"] >= 2]
    assert problems == [] and report["errors"] == [], report
