"""Render the Helm charts with the real Helm engine and validate what comes out.

The charts are rendered offline by helm-python-sdk (Helm's Go SDK behind a C
ABI, no helm binary, no cluster). Built-in kinds are checked against the
Kubernetes OpenAPI schemas shipped by kubernetes-validate; our custom
resources are checked against the openAPIV3Schema of the CRD in crds/, made
strict so that a field the API server would silently prune is an error.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python
import jsonschema
import kubernetes_validate
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
CHARTS_DIR = REPO_ROOT / "charts"
OPERATOR_CHART = CHARTS_DIR / "pulsar-operator"
CLUSTER_CHART = CHARTS_DIR / "pulsar-cluster"
TOP_LEVEL_CRDS = REPO_ROOT / "crds"

#: The newest Kubernetes version whose schemas kubernetes-validate ships.
KUBERNETES_VERSION = kubernetes_validate.latest_version()

Manifest = dict[str, Any]


def load_yaml_documents(text: str) -> list[Manifest]:
    """Every non-empty YAML document of a (multi-document) manifest text."""
    return [doc for doc in yaml.safe_load_all(text) if doc]


def render(
    chart_dir: Path,
    values: dict[str, Any] | None = None,
    *,
    release: str = "test",
    namespace: str = "pulsar",
) -> list[Manifest]:
    """Render a chart like `helm template` and parse every manifest it produced."""
    with helm_python.Chart.load(chart_dir) as chart:
        rendered = chart.render(values, name=release, namespace=namespace)
    manifests: list[Manifest] = []
    for template, text in sorted(rendered.items()):
        if not template.endswith((".yaml", ".yml")):
            continue  # NOTES.txt and helpers are not Kubernetes objects
        manifests.extend(load_yaml_documents(text))
    return manifests


def values_files(chart_dir: Path) -> list[Path]:
    """The sample values files of a chart (its ci/ folder, as chart-testing uses it)."""
    return sorted((chart_dir / "ci").glob("*.yaml"))


def read_values(path: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict), f"{path} must hold a mapping"
    return loaded


def validate_builtin(manifest: Manifest) -> None:
    """Validate a built-in kind against the Kubernetes schemas (strict: no unknown fields)."""
    try:
        kubernetes_validate.validate(manifest, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(part) for part in error.path)
        raise AssertionError(f"{describe(manifest)} is invalid at {path}: {error.message}") from error


def describe(manifest: Manifest) -> str:
    metadata = manifest.get("metadata") or {}
    return f"{manifest.get('apiVersion')}/{manifest.get('kind')} {metadata.get('name')!r}"


@dataclass(frozen=True)
class CustomResourceType:
    """One served version of a CRD: what a custom resource of it must look like."""

    group: str
    version: str
    kind: str
    plural: str
    scope: str
    schema: dict[str, Any]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


def crd_documents(crds_dir: Path = TOP_LEVEL_CRDS) -> list[Manifest]:
    docs: list[Manifest] = []
    for path in sorted(crds_dir.glob("*.yaml")):
        docs.extend(load_yaml_documents(path.read_text()))
    return [doc for doc in docs if doc.get("kind") == "CustomResourceDefinition"]


def custom_resource_types(crds_dir: Path = TOP_LEVEL_CRDS) -> dict[tuple[str, str], CustomResourceType]:
    """(apiVersion, kind) -> the CRD version serving it."""
    types: dict[tuple[str, str], CustomResourceType] = {}
    for crd in crd_documents(crds_dir):
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", False):
                continue
            crt = CustomResourceType(
                group=spec["group"],
                version=version["name"],
                kind=spec["names"]["kind"],
                plural=spec["names"]["plural"],
                scope=spec["scope"],
                schema=version["schema"]["openAPIV3Schema"],
            )
            types[(crt.api_version, crt.kind)] = crt
    return types


def strict_structural_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of a structural schema that rejects fields the API server would prune.

    Kubernetes drops unknown fields of a structural schema without an error;
    in a test we want to hear about them, so every object schema with
    `properties` and no other way to accept extra keys gets
    additionalProperties: false.
    """
    strict = copy.deepcopy(schema)
    for node in _schema_nodes(strict):
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields", False)
        ):
            node["additionalProperties"] = False
    return strict


def _schema_nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for key, child in node.items():
            if key == "properties" and isinstance(child, dict):
                for sub in child.values():
                    yield from _schema_nodes(sub)
            elif key in ("items", "additionalProperties", "not"):
                yield from _schema_nodes(child)
            elif key in ("allOf", "anyOf", "oneOf") and isinstance(child, list):
                for sub in child:
                    yield from _schema_nodes(sub)


def validate_custom(manifest: Manifest, types: dict[tuple[str, str], CustomResourceType]) -> None:
    """Validate a custom resource against its CRD's openAPIV3Schema."""
    key = (manifest.get("apiVersion", ""), manifest.get("kind", ""))
    assert key in types, f"{describe(manifest)}: no CRD in crds/ serves {key}"
    name = (manifest.get("metadata") or {}).get("name", "")
    assert isinstance(name, str) and name, f"{describe(manifest)} has no metadata.name"
    schema = strict_structural_schema(types[key].schema)
    # metadata is validated by the API server itself, not by the CRD schema.
    body = {k: v for k, v in manifest.items() if k != "metadata"}
    schema_without_metadata = dict(schema)
    schema_without_metadata["properties"] = {
        k: v for k, v in schema.get("properties", {}).items() if k != "metadata"
    }
    try:
        jsonschema.Draft7Validator(schema_without_metadata).validate(body)
    except jsonschema.ValidationError as error:
        path = ".".join(str(part) for part in error.path)
        raise AssertionError(f"{describe(manifest)} is invalid at {path}: {error.message}") from error


#: The fields of the Prometheus Operator's PodMonitor and ServiceMonitor the chart emits.
MONITORS_SCHEMA = Path(__file__).parent / "data" / "prometheus-operator-monitors.schema.yaml"
MONITORING_API_VERSION = "monitoring.coreos.com/v1"


def validate_monitor(manifest: Manifest) -> None:
    """Validate a PodMonitor or ServiceMonitor against the fields of its CRD the chart uses."""
    loaded = yaml.safe_load(MONITORS_SCHEMA.read_text())
    kind = manifest.get("kind")
    assert kind in loaded["kinds"], f"{describe(manifest)}: not a monitor kind the chart may emit"
    schema = {"definitions": loaded["definitions"], **loaded["kinds"][kind]}
    try:
        jsonschema.Draft7Validator(schema).validate(manifest)
    except jsonschema.ValidationError as error:
        path = ".".join(str(part) for part in error.path)
        raise AssertionError(f"{describe(manifest)} is invalid at {path}: {error.message}") from error


def validate_all(manifests: list[Manifest]) -> None:
    """Validate every rendered object: built-in kinds, our custom resources, monitors."""
    types = custom_resource_types()
    for manifest in manifests:
        if (manifest.get("apiVersion"), manifest.get("kind")) in types:
            validate_custom(manifest, types)
        elif manifest.get("apiVersion") == MONITORING_API_VERSION:
            validate_monitor(manifest)
        else:
            validate_builtin(manifest)


@pytest.fixture(scope="session")
def crd_types() -> dict[tuple[str, str], CustomResourceType]:
    types = custom_resource_types()
    assert types, f"no CustomResourceDefinition found in {TOP_LEVEL_CRDS}"
    return types


RenderChart = Any  # Callable[..., list[Manifest]]; kept loose for keyword arguments


@pytest.fixture(scope="session")
def render_chart() -> RenderChart:
    """`render(chart_dir, values=None, *, release="test", namespace="pulsar")`."""
    return render


@pytest.fixture(scope="session")
def validate_manifests() -> Any:
    """`validate_all(manifests)`: raises AssertionError naming the first invalid object."""
    return validate_all
