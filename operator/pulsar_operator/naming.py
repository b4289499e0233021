"""Names, labels and API coordinates shared by every reconciler.

One place decides how children are named (`<cluster>-broker`), which labels
select them, and which API group our kinds live in, so the reconcilers, the
applier and the tests never spell them differently.
"""

from __future__ import annotations

from typing import Any

GROUP = "pulsar.pulsar-py.dev"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
FUNCTION_MESH_GROUP = "compute.functionmesh.io"
FUNCTION_MESH_API_VERSION = f"{FUNCTION_MESH_GROUP}/v1alpha1"

MANAGED_BY = "pulsar-operator"
PART_OF = "pulsar-py"

ETCD = "etcd"
BOOKIE = "bookie"
BROKER = "broker"
PROXY = "proxy"
FUNCTIONS_WORKER = "functions-worker"
FUNCTION = "function"

#: Annotation prefix for kopf's own bookkeeping (progress, last handled spec).
ANNOTATION_PREFIX = GROUP
FINALIZER = f"{GROUP}/finalizer"


def child_name(owner: str, component: str) -> str:
    return f"{owner}-{component}"


def selector_labels(instance: str, component: str) -> dict[str, str]:
    """Labels that select a component's pods; stable for the object's life."""
    return {
        "app.kubernetes.io/name": "pulsar",
        "app.kubernetes.io/instance": instance,
        "app.kubernetes.io/component": component,
    }


def labels(instance: str, component: str, version: str | None = None) -> dict[str, str]:
    result = dict(selector_labels(instance, component))
    result["app.kubernetes.io/managed-by"] = MANAGED_BY
    result["app.kubernetes.io/part-of"] = PART_OF
    if version:
        result["app.kubernetes.io/version"] = version[:63]
    return result


def selector_string(selector: dict[str, str]) -> str:
    return ",".join(f"{key}={value}" for key, value in sorted(selector.items()))


def image_tag(image: str) -> str | None:
    """The tag of an image reference, used as the app.kubernetes.io/version label."""
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return None
    return last.split(":", 1)[1] if ":" in last else None


def owner_reference(owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner.get("metadata", {})
    return {
        "apiVersion": owner.get("apiVersion", API_VERSION),
        "kind": owner.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid") or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_metadata(owner: dict[str, Any], name: str, component: str, image: str | None = None) -> dict[str, Any]:
    meta = owner.get("metadata", {})
    instance = meta.get("name", "")
    return {
        "name": name,
        "namespace": meta.get("namespace") or "default",
        "labels": labels(instance, component, image_tag(image) if image else None),
        "ownerReferences": [owner_reference(owner)],
    }
