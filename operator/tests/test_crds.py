"""The CRDs: valid apiextensions v1, structural, documented, and their rules do what they say.

Examples are checked against the CRD schemas (jsonschema), and the CEL rules
(x-kubernetes-validations) are evaluated with a CEL implementation on valid
and invalid specs, since no API server runs here.
"""

from __future__ import annotations

import copy
import functools
import pathlib
from collections.abc import Iterator
from typing import Any

import celpy
import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO = pathlib.Path(__file__).resolve().parents[2]
K8S_VERSION = "1.37.0"
GROUP = "pulsar.pulsar-py.dev"
CRD_FILES = sorted((REPO / "crds").glob("*.yaml"))
EXPECTED = {
    f"pulsarclusters.{GROUP}": ("PulsarCluster", True),
    f"tenants.{GROUP}": ("Tenant", False),
    f"pulsarnamespaces.{GROUP}": ("PulsarNamespace", False),
    f"functions.{GROUP}": ("Function", True),
    "functions.compute.functionmesh.io": ("Function", True),
}


@functools.cache
def crds() -> list[dict[str, Any]]:
    """Parsed once per run (the tests only read them)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for path in CRD_FILES for d in yaml.load_all(path.read_text(), Loader=loader) if d]


@functools.cache
def program(rule: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def by_name(name: str) -> dict[str, Any]:
    return next(d for d in crds() if d["metadata"]["name"] == name)


def schema_of(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def walk(node: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, node
    for key, child in (node.get("properties") or {}).items():
        yield from walk(child, f"{path}.{key}")
    if isinstance(node.get("items"), dict):
        yield from walk(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk(node["additionalProperties"], f"{path}{{}}")


def test_the_crd_files_hold_exactly_our_kinds() -> None:
    found = {d["metadata"]["name"]: (d["spec"]["names"]["kind"], "scale" in d["spec"]["versions"][0]["subresources"])
             for d in crds()}
    assert found == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_crd_validates_as_apiextensions_v1(name: str) -> None:
    kubernetes_validate.validate(by_name(name), K8S_VERSION, strict=True)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_schema_is_structural_and_documented(name: str) -> None:
    crd = by_name(name)
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"
    assert [v["name"] for v in spec["versions"]] == ["v1alpha1"]
    for path, node in walk(schema_of(crd)):
        typed = "type" in node or node.get("x-kubernetes-int-or-string")
        assert typed, f"{name}: {path or '<root>'} has no type"
        if path.startswith(".spec") and "[]" not in path and "{}" not in path:
            assert node.get("description"), f"{name}: {path} has no description (kubectl explain shows it)"
        if "properties" in node:
            assert node.get("type") == "object" and "additionalProperties" not in node, path
        for branch in node.get("anyOf", []):
            assert set(branch) <= {"type"} and node.get("x-kubernetes-int-or-string"), path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_status_subresource_and_printer_columns_point_at_real_fields(name: str) -> None:
    version = by_name(name)["spec"]["versions"][0]
    assert version["subresources"]["status"] == {}
    paths = {path for path, _ in walk(schema_of(by_name(name)))}
    columns = version["additionalPrinterColumns"]
    assert {c["name"] for c in columns} >= {"Ready", "Age"}
    for column in columns:
        json_path = column["jsonPath"]
        if json_path.startswith((".status.conditions", ".metadata")):
            continue
        assert json_path in paths, f"{name}: printer column {column['name']} -> {json_path}"
    scale = version["subresources"].get("scale")
    if scale:
        for key in ("specReplicasPath", "statusReplicasPath", "labelSelectorPath"):
            assert scale[key] in paths, (name, key)


def jsonschema_of(crd: dict[str, Any]) -> dict[str, Any]:
    """The OpenAPI schema as plain JSON Schema (x-kubernetes-* extensions dropped)."""
    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items() if not k.startswith("x-kubernetes")}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node
    return clean(schema_of(crd))  # type: ignore[no-any-return]


EXAMPLES = {
    "pulsar-cluster.yaml": f"pulsarclusters.{GROUP}",
    "tenant.yaml": f"tenants.{GROUP}",
    "namespace.yaml": f"pulsarnamespaces.{GROUP}",
    "function.yaml": "functions.compute.functionmesh.io",
}


def example(name: str) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "examples" / name).read_text())
    return doc


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_match_their_crd_schema(name: str) -> None:
    doc = example(name)
    crd = by_name(EXAMPLES[name])
    assert doc["apiVersion"] == f"{crd['spec']['group']}/v1alpha1"
    assert doc["kind"] == crd["spec"]["names"]["kind"]
    jsonschema.validate(doc, jsonschema_of(crd))


def test_an_example_function_applies_to_our_group_too() -> None:
    jsonschema.validate(example("function.yaml"), jsonschema_of(by_name(f"functions.{GROUP}")))


@pytest.mark.parametrize(("name", "path", "value"), [
    ("tenant.yaml", ("spec", "lifecyclePolicy"), "Sometimes"),
    ("pulsar-cluster.yaml", ("spec", "proxy", "serviceType"), "Ingress"),
    ("pulsar-cluster.yaml", ("spec", "bookkeeper", "replicas"), 0),
    ("namespace.yaml", ("spec", "bundles"), 0),
    ("function.yaml", ("spec", "processingGuarantee"), "twice"),
])
def test_schema_constraints_reject_bad_values(name: str, path: tuple[str, ...], value: Any) -> None:
    doc = example(name)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, jsonschema_of(by_name(EXAMPLES[name])))


def rules(crd: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(path, rule) for path, node in walk(schema_of(crd)) for rule in node.get("x-kubernetes-validations", [])]


def at(doc: Any, path: str) -> Any:
    node = doc
    for key in path.strip(".").split("."):
        if not key:
            continue
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def failing(crd_name: str, doc: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """Messages of the CEL rules `doc` breaks (rules on absent fields do not run, as in Kubernetes)."""
    messages = []
    for path, rule in rules(by_name(crd_name)):
        value = at(doc, path)
        uses_old = "oldSelf" in rule["rule"]
        old_value = at(old, path) if old is not None else None
        if value is None or (uses_old and old_value is None):
            continue
        activation = {"self": celpy.json_to_cel(value)}
        if uses_old:
            activation["oldSelf"] = celpy.json_to_cel(old_value)
        result = program(rule["rule"]).evaluate(activation)
        if isinstance(result, Exception) or not bool(result):
            messages.append(rule["message"])
    return messages


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_examples_pass_every_cel_rule_also_on_update(name: str) -> None:
    doc = example(name)
    assert failing(EXAMPLES[name], doc) == []
    assert failing(EXAMPLES[name], doc, old=copy.deepcopy(doc)) == []


CLUSTER = f"pulsarclusters.{GROUP}"
NAMESPACE = f"pulsarnamespaces.{GROUP}"


@pytest.mark.parametrize(("crd_name", "name", "change", "message"), [
    (CLUSTER, "pulsar-cluster.yaml", {"broker": {"config": {"managedLedgerDefaultAckQuorum": "3",
                                                            "managedLedgerDefaultWriteQuorum": "2"}}},
     "managedLedgerDefaultAckQuorum must be <= managedLedgerDefaultWriteQuorum"),
    (CLUSTER, "pulsar-cluster.yaml", {"broker": {"config": {"managedLedgerDefaultWriteQuorum": "3",
                                                            "managedLedgerDefaultEnsembleSize": "2"}}},
     "managedLedgerDefaultWriteQuorum must be <= managedLedgerDefaultEnsembleSize"),
    (CLUSTER, "pulsar-cluster.yaml", {"broker": {"config": {"managedLedgerDefaultEnsembleSize": "4"}}},
     "managedLedgerDefaultEnsembleSize must be <= bookkeeper.replicas"),
    (CLUSTER, "pulsar-cluster.yaml", {"etcd": {"replicas": 2}}, "etcd.replicas must be odd"),
    (NAMESPACE, "namespace.yaml", {"persistence": {"bookkeeperEnsemble": 2, "bookkeeperWriteQuorum": 3,
                                                   "bookkeeperAckQuorum": 2}},
     "bookkeeperWriteQuorum must be <= bookkeeperEnsemble"),
    (f"tenants.{GROUP}", "tenant.yaml", {"clusterRef": {}}, "clusterRef needs name or webServiceURL"),
    ("functions.compute.functionmesh.io", "function.yaml", {"minReplicas": 5, "maxReplicas": 3},
     "minReplicas must be <= maxReplicas"),
    ("functions.compute.functionmesh.io", "function.yaml", {"input": {"topics": []}},
     "input.topics or input.topicPattern is required"),
])
def test_cel_rules_reject_what_the_operator_rejects(crd_name: str, name: str, change: dict[str, Any],
                                                    message: str) -> None:
    doc = example(name)
    doc["spec"].update(change)
    assert message in failing(crd_name, doc)


@pytest.mark.parametrize(("crd_name", "name", "field", "new"), [
    (NAMESPACE, "namespace.yaml", "bundles", 8),
    (NAMESPACE, "namespace.yaml", "tenant", "other"),
    (CLUSTER, "pulsar-cluster.yaml", "clusterName", "renamed"),
])
def test_immutable_fields_cannot_change_on_update(crd_name: str, name: str, field: str, new: Any) -> None:
    old = example(name)
    old["spec"].setdefault(field, "original")
    doc = copy.deepcopy(old)
    doc["spec"][field] = new
    assert any("immutable" in m or "cannot" in m for m in failing(crd_name, doc, old=old))


def unknown_fields(value: Any, schema: dict[str, Any], path: str = "") -> list[str]:
    """Fields an API server would prune from `value` under the structural `schema`."""
    if schema.get("x-kubernetes-preserve-unknown-fields") or not isinstance(value, (dict, list)):
        return []
    if isinstance(value, list):
        return [f for i, item in enumerate(value) for f in unknown_fields(item, schema.get("items") or {}, f"{path}[{i}]")]
    props = schema.get("properties")
    if props is None:
        extra = schema.get("additionalProperties")
        return [f for k, v in value.items() for f in unknown_fields(v, extra, f"{path}.{k}")] if isinstance(extra, dict) else []
    missing = [f"{path}.{k}" for k in value if k not in props]
    return missing + [f for k, v in value.items() if k in props for f in unknown_fields(v, props[k], f"{path}.{k}")]


def without_nulls(value: Any) -> Any:
    """What a merge patch leaves of `value`: a null removes its field, at any depth."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


def test_the_status_the_operator_writes_survives_schema_pruning() -> None:
    from pulsar_operator import cluster_reconcile, conditions, function_reconcile, naming, services

    cluster = example("pulsar-cluster.yaml")
    cluster["metadata"].update(namespace="ns", generation=3)
    cluster["spec"]["functionsWorker"] = {"enabled": True}  # adds status.components.functionsWorker
    observed = {naming.BOOKIE: cluster_reconcile.ObservedSet(5, 5, 5), naming.BROKER: cluster_reconcile.ObservedSet(2, 2, 1)}
    function = example("function.yaml")
    function["spec"]["statefulConfig"] = {"pulsar": {"serviceUrl": "bk://x:4181"}}  # adds status.ignoredFields
    statuses = {
        f"pulsarclusters.{GROUP}": cluster_reconcile.reconcile(cluster, observed, "2026-01-01T00:00:00Z").status,
        "functions.compute.functionmesh.io": function_reconcile.reconcile(
            function, {"status": {"replicas": 1, "readyReplicas": 1}}, image="i", cluster_status=None,
            now="2026-01-01T00:00:00Z").status,
        f"tenants.{GROUP}": services._status(example("tenant.yaml"), conditions.ready(), tenant="acme"),
        f"pulsarnamespaces.{GROUP}": services._status(example("namespace.yaml"), conditions.ready(), namespace="a/b"),
    }
    statuses[f"pulsarclusters.{GROUP}"]["metadataInitialized"] = True
    for crd_name, status in statuses.items():
        status = without_nulls(status)
        assert unknown_fields(status, schema_of(by_name(crd_name))["properties"]["status"]) == [], crd_name
        jsonschema.validate(status, jsonschema_of(by_name(crd_name))["properties"]["status"])
