"""Builders for the Kubernetes objects the reconcilers ask for.

Plain dicts in the shape the API server takes (apps/v1 StatefulSet, v1
Service/ConfigMap, policy/v1 PodDisruptionBudget); no I/O. The reconcilers
decide what to build; these functions only know how objects look.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pulsar_operator import naming

CONFIG_HASH_ANNOTATION = f"{naming.GROUP}/config-hash"


def config_hash(*parts: Any) -> str:
    """Short digest of rendered config, put on pod templates so edits roll the pods."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def http_probe(path: str, port: int, *, initial_delay_s: int, period_s: int = 10, failures: int = 6) -> dict[str, Any]:
    return {
        "httpGet": {"path": path, "port": port},
        "initialDelaySeconds": initial_delay_s,
        "periodSeconds": period_s,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def pod_env() -> list[dict[str, Any]]:
    """POD_NAME/POD_NAMESPACE/POD_IP from the downward API, for `$(VAR)` expansions of the command line.

    POD_IP is what servers bind to: a pod's own address rather than 0.0.0.0, so
    nothing listens on addresses the pod does not own (pods that share a host
    network, as in the operator's e2e harness, then never collide on a port).
    """
    return [
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]


def container_ports(ports: dict[str, int]) -> list[dict[str, Any]]:
    return [{"name": name, "containerPort": port, "protocol": "TCP"} for name, port in ports.items()]


def config_map(metadata: dict[str, Any], data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": dict(data)}


def service(
    metadata: dict[str, Any],
    selector: dict[str, str],
    ports: dict[str, int],
    *,
    headless: bool = False,
    service_type: str = "ClusterIP",
    publish_not_ready: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "selector": dict(selector),
        "ports": [{"name": name, "port": port, "targetPort": port, "protocol": "TCP"} for name, port in ports.items()],
    }
    if headless:
        spec["clusterIP"] = "None"
    else:
        spec["type"] = service_type
    if publish_not_ready:
        spec["publishNotReadyAddresses"] = True
    return {"apiVersion": "v1", "kind": "Service", "metadata": metadata, "spec": spec}


def volume_claim(name: str, size: str, storage_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"metadata": {"name": name}, "spec": spec}


def pod_spec(
    containers: list[dict[str, Any]],
    pod_policy: dict[str, Any],
    selector: dict[str, str],
    *,
    volumes: list[dict[str, Any]] | None = None,
    extra_affinity: dict[str, Any] | None = None,
    extra_spread: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Pod spec with the shared pod policy applied (scheduling, security, service account)."""
    spec: dict[str, Any] = {"containers": containers, "terminationGracePeriodSeconds": 30}
    if volumes:
        spec["volumes"] = volumes
    for key in ("serviceAccountName", "nodeSelector", "tolerations", "securityContext"):
        if pod_policy.get(key):
            spec[key] = pod_policy[key]
    affinity = dict(pod_policy.get("affinity") or {})
    if extra_affinity and "podAntiAffinity" not in affinity:
        affinity.update(extra_affinity)
    if affinity:
        spec["affinity"] = affinity
    spread = [_with_selector(c, selector) for c in pod_policy.get("topologySpreadConstraints") or []]
    spread += extra_spread or []
    if spread:
        spec["topologySpreadConstraints"] = spread
    return spec


def _with_selector(constraint: dict[str, Any], selector: dict[str, str]) -> dict[str, Any]:
    result = dict(constraint)
    result.setdefault("labelSelector", {"matchLabels": dict(selector)})
    return result


def anti_affinity(selector: dict[str, str]) -> dict[str, Any]:
    """Prefer one pod of the component per node (soft, so small clusters still schedule)."""
    term = {"labelSelector": {"matchLabels": dict(selector)}, "topologyKey": "kubernetes.io/hostname"}
    return {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": term},
    ]}}


def stateful_set(
    metadata: dict[str, Any],
    *,
    replicas: int | None,
    selector: dict[str, str],
    service_name: str,
    pod_labels: dict[str, str],
    pod_annotations: dict[str, str],
    spec: dict[str, Any],
    claims: list[dict[str, Any]] | None = None,
    claims_when_deleted: str = "Retain",
    parallel: bool = False,
) -> dict[str, Any]:
    """A StatefulSet; replicas None leaves the count to someone else (an HPA).

    Its claims go with it on deletion when claims_when_deleted is "Delete"; they are
    always kept when it scales down (a bookie's data must be drained first)."""
    body: dict[str, Any] = {
        "serviceName": service_name,
        "selector": {"matchLabels": dict(selector)},
        "podManagementPolicy": "Parallel" if parallel else "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate"},
        "template": {"metadata": {"labels": pod_labels, "annotations": pod_annotations}, "spec": spec},
    }
    if replicas is not None:
        body["replicas"] = replicas
    if claims:
        body["volumeClaimTemplates"] = claims
        body["persistentVolumeClaimRetentionPolicy"] = {"whenDeleted": claims_when_deleted,
                                                        "whenScaled": "Retain"}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": metadata, "spec": body}


def pod_disruption_budget(metadata: dict[str, Any], selector: dict[str, str], max_unavailable: int) -> dict[str, Any]:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata,
        "spec": {"maxUnavailable": max_unavailable, "selector": {"matchLabels": dict(selector)}},
    }


def resources_of(raw: dict[str, Any]) -> dict[str, Any]:
    return {key: dict(raw[key]) for key in ("requests", "limits") if raw.get(key)}
