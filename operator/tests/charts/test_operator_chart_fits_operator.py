"""The operator chart against the operator's own code: its command line parses with the real
`pulsar operator` arguments, and its RBAC covers every object the reconcilers plan."""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulsar_common.cli import main as pulsar_cli
from pulsar_operator import cli, cluster_reconcile, function_reconcile, handlers, kube

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "pulsar-operator"
EXAMPLES = REPO / "examples"
NOW = "2026-01-01T00:00:00Z"
#: What the applier does to an object it owns: read, create, merge-patch, delete.
APPLIER_VERBS = {"get", "create", "patch", "delete"}


def example(name: str, namespace: str) -> dict[str, Any]:
    body: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())
    body["metadata"].update(namespace=namespace, uid=f"uid-{body['metadata']['name']}", generation=1)
    return body


def parse_operator_args(manifests: list[dict[str, Any]]) -> argparse.Namespace:
    (deployment,) = [m for m in manifests if m["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["pulsar"] and container["args"][0] == "operator"
    parser = argparse.ArgumentParser(prog="pulsar operator")
    cli.add_arguments(parser)
    return parser.parse_args(container["args"][1:])


def test_the_pulsar_command_accepts_the_chart_command_line(render_chart: Any) -> None:
    """The image's `pulsar` entry point must know `operator`, or the pod exits at once."""
    (deployment,) = [m for m in render_chart(CHART) if m["kind"] == "Deployment"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    args = pulsar_cli.build_parser().parse_args(container["args"])
    assert args.command == "operator" and args.namespace == ["pulsar"]


def planned_kinds(namespace: str) -> set[tuple[str, str]]:
    """(apiVersion, kind) of every object the reconcilers create, patch or delete for the examples."""
    plans = [cluster_reconcile.reconcile(example("pulsar-cluster.yaml", namespace), {}, NOW)]
    function = example("function.yaml", namespace)
    without_autoscaling = copy.deepcopy(function)
    without_autoscaling["spec"].pop("maxReplicas", None)
    for body in (function, without_autoscaling):
        plans.append(function_reconcile.reconcile(body, None, image="pulsar-py:0.1.0", cluster_status=None, now=NOW))
    kinds = set()
    for plan in plans:
        assert plan.objects, "a reconcile of an example planned nothing; is the example valid?"
        kinds |= {(obj["apiVersion"], obj["kind"]) for obj in plan.objects}
        kinds |= {(ref.api_version, ref.kind) for ref in plan.deletions}
    return kinds


def granted(rules: list[dict[str, Any]], group: str, resource: str, verb: str) -> bool:
    return any(
        group in r.get("apiGroups", []) and resource in r.get("resources", []) and verb in r.get("verbs", [])
        and not r.get("resourceNames")
        for r in rules
    )


def rules_in(manifests: list[dict[str, Any]], namespace: str | None) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = []
    for m in manifests:
        if m["kind"] == "ClusterRole" or (m["kind"] == "Role" and m["metadata"]["namespace"] == namespace):
            rules.extend(m["rules"])
    return rules


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"watch": {"allNamespaces": True, "namespaces": []}},
        {"watch": {"allNamespaces": False, "namespaces": ["team-a", "team-b"]}, "health": {"port": 9090},
         "leaderElection": {"enabled": False, "leaseName": "x"}, "functionMesh": {"enabled": False},
         "verbose": True, "resyncIntervalSeconds": 12.5},
    ],
    ids=["default", "all-namespaces", "two-namespaces"],
)
def test_chart_command_line_parses_with_the_real_operator_arguments(
    render_chart: Any, values: dict[str, Any]
) -> None:
    manifests = render_chart(CHART, values, namespace="operators")
    args = parse_operator_args(manifests)
    watch = values.get("watch", {"allNamespaces": False, "namespaces": []})
    assert args.all_namespaces is watch["allNamespaces"]
    assert args.namespace == (watch["namespaces"] or ([] if watch["allNamespaces"] else ["operators"]))
    assert args.liveness_port == values.get("health", {}).get("port", 8080)
    leader = values.get("leaderElection", {"enabled": True, "leaseName": "pulsar-operator"})
    assert args.leader_election is leader["enabled"]
    if leader["enabled"]:
        assert (args.lease_name, args.lease_namespace) == (leader["leaseName"], "operators")
    assert args.function_mesh is values.get("functionMesh", {"enabled": True})["enabled"]
    assert args.verbose is values.get("verbose", False)
    assert args.resync_interval == values.get("resyncIntervalSeconds", 30)


@pytest.mark.parametrize("all_namespaces", [False, True], ids=["namespaced", "cluster-wide"])
def test_rbac_covers_every_object_the_reconcilers_plan(render_chart: Any, all_namespaces: bool) -> None:
    values = {"watch": {"allNamespaces": all_namespaces, "namespaces": []}}
    manifests = render_chart(CHART, values, namespace="pulsar")
    rules = rules_in(manifests, None if all_namespaces else "pulsar")
    missing = []
    for api_version, kind in sorted(planned_kinds("pulsar")):
        group = api_version.rpartition("/")[0]
        resource = kube.PLURALS[(api_version, kind)]
        missing += [f"{verb} {kind}" for verb in sorted(APPLIER_VERBS) if not granted(rules, group, resource, verb)]
    assert missing == []


@pytest.mark.parametrize("all_namespaces", [False, True], ids=["namespaced", "cluster-wide"])
def test_rbac_covers_every_resource_the_handlers_watch(render_chart: Any, all_namespaces: bool) -> None:
    values = {"watch": {"allNamespaces": all_namespaces, "namespaces": []}}
    rules = rules_in(render_chart(CHART, values, namespace="pulsar"), None if all_namespaces else "pulsar")
    missing = []
    for group, _version, plural in handlers.KINDS.values():
        for verb in ("get", "list", "watch", "patch"):
            if not granted(rules, group, plural, verb):
                missing.append(f"{verb} {group}/{plural}")
        if not granted(rules, group, f"{plural}/status", "patch"):
            missing.append(f"patch {group}/{plural}/status")
    assert missing == []
