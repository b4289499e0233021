"""Tenant and PulsarNamespace -> admin REST calls (Apache admin v2 paths).

Pure: given the custom resource and what the broker currently reports (the
GET result, or None when it answered 404), decide which PUT/POST calls bring
Pulsar in line. Running the plan again after it succeeded plans nothing,
which is how the drift-correction timer stays quiet when nothing drifted.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from pulsar_operator.plan import AdminCall

CLEAN_UP = "CleanUpAfterDeletion"
KEEP = "KeepAfterDeletion"
_NAME = re.compile(r"^[-=:.\w]+$")


@dataclasses.dataclass(frozen=True)
class ClusterRef:
    name: str | None
    web_service_url: str | None


@dataclasses.dataclass(frozen=True)
class TenantSpec:
    tenant: str
    admin_roles: tuple[str, ...]
    allowed_clusters: tuple[str, ...]
    lifecycle_policy: str
    cluster_ref: ClusterRef


@dataclasses.dataclass(frozen=True)
class NamespaceSpec:
    tenant: str
    namespace: str
    bundles: int | None
    retention: dict[str, Any] | None
    message_ttl_seconds: int | None
    backlog_quota: dict[str, Any] | None
    deduplication: bool | None
    persistence: dict[str, Any] | None
    lifecycle_policy: str
    cluster_ref: ClusterRef

    @property
    def path(self) -> str:
        return f"/admin/v2/namespaces/{self.tenant}/{self.namespace}"


def _cluster_ref(spec: dict[str, Any]) -> ClusterRef:
    ref = spec.get("clusterRef") or {}
    return ClusterRef(name=ref.get("name"), web_service_url=ref.get("webServiceURL"))


def _common_problems(spec: dict[str, Any], names: dict[str, str]) -> list[str]:
    problems = []
    ref = _cluster_ref(spec)
    if not ref.name and not ref.web_service_url:
        problems.append("spec.clusterRef needs name or webServiceURL")
    if spec.get("lifecyclePolicy", CLEAN_UP) not in (CLEAN_UP, KEEP):
        problems.append(f"spec.lifecyclePolicy must be {CLEAN_UP} or {KEEP}")
    for where, value in names.items():
        if not value or not _NAME.match(value):
            problems.append(f"{where} {value!r} is not a valid Pulsar name")
    return problems


def parse_tenant(body: dict[str, Any], default_cluster: str | None = None) -> TenantSpec:
    spec = body.get("spec") or {}
    clusters = tuple(spec.get("allowedClusters") or ())
    if not clusters and default_cluster:
        clusters = (default_cluster,)
    return TenantSpec(
        tenant=str(spec.get("name") or (body.get("metadata") or {}).get("name", "")),
        admin_roles=tuple(spec.get("adminRoles") or ()),
        allowed_clusters=clusters,
        lifecycle_policy=str(spec.get("lifecyclePolicy") or CLEAN_UP),
        cluster_ref=_cluster_ref(spec),
    )


def validate_tenant(body: dict[str, Any]) -> list[str]:
    spec = body.get("spec") or {}
    return _common_problems(spec, {"tenant name": parse_tenant(body).tenant})


def tenant_path(tenant: str) -> str:
    return f"/admin/v2/tenants/{tenant}"


def tenant_body(spec: TenantSpec) -> dict[str, Any]:
    return {"adminRoles": list(spec.admin_roles), "allowedClusters": list(spec.allowed_clusters)}


def plan_tenant(spec: TenantSpec, observed: dict[str, Any] | None) -> list[AdminCall]:
    """PUT when missing, POST (update) when roles or clusters drifted, nothing otherwise."""
    if observed is None:
        return [AdminCall("PUT", tenant_path(spec.tenant), tenant_body(spec), ok_statuses=(409,))]
    same = (set(observed.get("adminRoles") or ()) == set(spec.admin_roles)
            and set(observed.get("allowedClusters") or ()) == set(spec.allowed_clusters))
    return [] if same else [AdminCall("POST", tenant_path(spec.tenant), tenant_body(spec))]


def delete_tenant(spec: TenantSpec) -> list[AdminCall]:
    if spec.lifecycle_policy != CLEAN_UP:
        return []
    return [AdminCall("DELETE", tenant_path(spec.tenant), ok_statuses=(404,))]


def parse_namespace(body: dict[str, Any]) -> NamespaceSpec:
    spec = body.get("spec") or {}
    ttl = spec.get("messageTTLSeconds")
    dedup = spec.get("deduplication")
    return NamespaceSpec(
        tenant=str(spec.get("tenant") or ""),
        namespace=str(spec.get("name") or (body.get("metadata") or {}).get("name", "")),
        bundles=int(spec["bundles"]) if spec.get("bundles") is not None else None,
        retention=spec.get("retention"),
        message_ttl_seconds=int(ttl) if ttl is not None else None,
        backlog_quota=spec.get("backlogQuota"),
        deduplication=bool(dedup) if dedup is not None else None,
        persistence=spec.get("persistence"),
        lifecycle_policy=str(spec.get("lifecyclePolicy") or CLEAN_UP),
        cluster_ref=_cluster_ref(spec),
    )


def validate_namespace(body: dict[str, Any]) -> list[str]:
    spec = body.get("spec") or {}
    parsed = parse_namespace(body)
    problems = _common_problems(spec, {"spec.tenant": parsed.tenant, "namespace name": parsed.namespace})
    if parsed.bundles is not None and not 1 <= parsed.bundles <= 65536:
        problems.append("spec.bundles must be between 1 and 65536")
    persistence = parsed.persistence or {}
    if persistence:
        e = int(persistence.get("bookkeeperEnsemble", 0))
        wq = int(persistence.get("bookkeeperWriteQuorum", 0))
        aq = int(persistence.get("bookkeeperAckQuorum", 0))
        if not 1 <= aq <= wq <= e:
            problems.append(
                f"spec.persistence: bookkeeperAckQuorum ({aq}) <= bookkeeperWriteQuorum ({wq}) "
                f"<= bookkeeperEnsemble ({e}) must hold, all >= 1"
            )
    return problems


def _retention(spec: NamespaceSpec) -> dict[str, Any] | None:
    if spec.retention is None:
        return None
    return {"retentionTimeInMinutes": int(spec.retention.get("timeInMinutes", 0)),
            "retentionSizeInMB": int(spec.retention.get("sizeInMB", 0))}


def _backlog_quotas(spec: NamespaceSpec) -> dict[str, dict[str, Any]]:
    """Quota per Apache backlogQuotaType: size -> destination_storage, time -> message_age."""
    quota = spec.backlog_quota
    if not quota:
        return {}
    policy = str(quota.get("policy") or "producer_request_hold")
    result = {}
    if quota.get("limitSize") is not None:
        result["destination_storage"] = {"limitSize": int(quota["limitSize"]), "limitTime": -1, "policy": policy}
    if quota.get("limitTimeSeconds") is not None:
        result["message_age"] = {"limitSize": -1, "limitTime": int(quota["limitTimeSeconds"]), "policy": policy}
    return result


def _persistence(spec: NamespaceSpec) -> dict[str, Any] | None:
    if not spec.persistence:
        return None
    p = spec.persistence
    return {
        "bookkeeperEnsemble": int(p["bookkeeperEnsemble"]),
        "bookkeeperWriteQuorum": int(p["bookkeeperWriteQuorum"]),
        "bookkeeperAckQuorum": int(p["bookkeeperAckQuorum"]),
        "managedLedgerMaxMarkDeleteRate": float(p.get("managedLedgerMaxMarkDeleteRate", 0)),
    }


def _subset(want: dict[str, Any], have: Any) -> bool:
    return isinstance(have, dict) and all(have.get(k) == v for k, v in want.items())


def plan_namespace(spec: NamespaceSpec, observed: dict[str, Any] | None) -> list[AdminCall]:
    """Create when missing (with bundles), then set each managed policy that differs.

    `observed` is the namespace's Policies document (GET /admin/v2/namespaces/{t}/{ns})
    with Apache field names; a policy missing from it counts as drifted.
    """
    calls: list[AdminCall] = []
    have = observed or {}
    if observed is None:
        body = {"bundles": {"numBundles": spec.bundles}} if spec.bundles else None
        calls.append(AdminCall("PUT", spec.path, body, ok_statuses=(409,)))
    if (retention := _retention(spec)) is not None and not _subset(retention, have.get("retention_policies")):
        calls.append(AdminCall("POST", f"{spec.path}/retention", retention))
    if spec.message_ttl_seconds is not None and have.get("message_ttl_in_seconds") != spec.message_ttl_seconds:
        calls.append(AdminCall("POST", f"{spec.path}/messageTTL", spec.message_ttl_seconds))
    quotas_have = have.get("backlog_quota_map") or {}
    for kind, quota in _backlog_quotas(spec).items():
        if not _subset(quota, quotas_have.get(kind)):
            calls.append(AdminCall("POST", f"{spec.path}/backlogQuota", quota, params=(("backlogQuotaType", kind),)))
    if spec.deduplication is not None and have.get("deduplicationEnabled") != spec.deduplication:
        calls.append(AdminCall("POST", f"{spec.path}/deduplication", spec.deduplication))
    if (persistence := _persistence(spec)) is not None and not _subset(persistence, have.get("persistence")):
        calls.append(AdminCall("POST", f"{spec.path}/persistence", persistence))
    return calls


def delete_namespace(spec: NamespaceSpec) -> list[AdminCall]:
    if spec.lifecycle_policy != CLEAN_UP:
        return []
    return [AdminCall("DELETE", spec.path, ok_statuses=(404,))]
