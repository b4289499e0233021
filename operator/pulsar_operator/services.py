"""The reconcile steps the kopf handlers call: read observed state, plan, apply, report.

Each function takes the custom resource as a plain dict plus the adapters
(Kubernetes client, admin client factory) and returns the status to write.
Errors of the Pulsar admin API and of a missing cluster end up in that
status (Degraded, with the message); the next resync retries.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Callable, Mapping
from typing import Any

from pulsar_operator import (
    admin,
    applier,
    cluster_config,
    cluster_reconcile,
    cluster_spec,
    conditions,
    errors,
    function_reconcile,
    function_spec,
    kube,
    naming,
    tenant_namespace,
)
from pulsar_operator.plan import ObjectRef

#: admin.AdminClient or a stand-in: (web service URL, credentials=AdminCredentials).
AdminFactory = Callable[..., admin.AdminClient]
logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class OperatorConfig:
    """Settings from the command line."""

    #: Image of function instances when a Function names none.
    function_image: str = "pulsar-py:0.1.0"
    resync_interval_s: float = 30.0


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def plain(value: Any) -> Any:
    """Deep copy of kopf's body views as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _sts_ref(namespace: str, name: str) -> ObjectRef:
    return ObjectRef("apps/v1", "StatefulSet", namespace, name)


async def reconcile_cluster(body: dict[str, Any], client: kube.KubeClient, admins: AdminFactory) -> dict[str, Any]:
    meta = body["metadata"]
    namespace = meta.get("namespace") or "default"
    observed = {
        component: cluster_reconcile.ObservedSet.of(
            await client.get(_sts_ref(namespace, naming.child_name(meta["name"], component))))
        for component in cluster_reconcile.COMPONENT_STATUS_KEYS
    }
    plan = cluster_reconcile.reconcile(body, observed, now_iso())
    if plan.objects or plan.deletions:
        await applier.apply(client, plan.objects, plan.deletions)
    status = dict(plan.status)
    if plan.admin_calls:
        try:
            spec = cluster_spec.parse(body)
            credentials = await admin.credentials_for(spec, client)
            async with admins(cluster_config.admin_url(spec), credentials=credentials) as api:
                await api.run(plan.admin_calls)
            status["metadataInitialized"] = True
        except errors.AdminApiError as exc:
            logger.warning("cluster metadata not initialised yet: %s", exc)
    return status


async def resolve_cluster(
    body: dict[str, Any], client: kube.KubeClient
) -> tuple[str, str | None, dict[str, Any] | None]:
    """(admin URL, Pulsar cluster name, PulsarCluster status) for a clusterRef."""
    spec = body.get("spec") or {}
    ref = spec.get("clusterRef") or {}
    namespace = (body.get("metadata") or {}).get("namespace") or "default"
    cluster_status: dict[str, Any] | None = None
    if ref.get("name"):
        cluster = await client.get(ObjectRef(naming.API_VERSION, "PulsarCluster", namespace, ref["name"]))
        if cluster is None and not ref.get("webServiceURL"):
            raise errors.ClusterGoneError(f"PulsarCluster {namespace}/{ref['name']} does not exist")
        cluster_status = (cluster or {}).get("status") or {}
    url = ref.get("webServiceURL") or (cluster_status or {}).get("webServiceURL")
    if not url:
        raise errors.ClusterNotReadyError(f"PulsarCluster {namespace}/{ref.get('name')} has no webServiceURL yet")
    name = (cluster_status or {}).get("clusterName") or ref.get("name")
    return str(url), name, cluster_status


async def cluster_access(body: dict[str, Any], client: kube.KubeClient,
                         url: str) -> tuple[str, admin.AdminCredentials]:
    """(admin URL, credentials) for the PulsarCluster a Tenant or Namespace names: its HTTPS
    URL with spec.tls and its operator token with spec.auth; url as given for a cluster
    named only by webServiceURL."""
    ref = (body.get("spec") or {}).get("clusterRef") or {}
    if not ref.get("name"):
        return url, admin.NO_CREDENTIALS
    namespace = (body.get("metadata") or {}).get("namespace") or "default"
    cluster = await client.get(ObjectRef(naming.API_VERSION, "PulsarCluster", namespace, ref["name"]))
    if cluster is None:
        return url, admin.NO_CREDENTIALS
    spec = cluster_spec.parse(cluster)
    if spec.tls.enabled and not ref.get("webServiceURL"):
        url = cluster_config.admin_url(spec)
    return url, await admin.credentials_for(spec, client)


def _status(body: dict[str, Any], conds: list[conditions.Condition], **extra: Any) -> dict[str, Any]:
    generation = (body.get("metadata") or {}).get("generation")
    old = (body.get("status") or {}).get("conditions")
    return {"observedGeneration": generation, "conditions": conditions.merge(old, conds, now_iso(), generation),
            **extra}


async def sync_tenant(body: dict[str, Any], client: kube.KubeClient, admins: AdminFactory) -> dict[str, Any]:
    problems = tenant_namespace.validate_tenant(body)
    if problems:
        return _status(body, conditions.invalid_spec(problems))
    try:
        url, cluster_name, _ = await resolve_cluster(body, client)
        spec = tenant_namespace.parse_tenant(body, cluster_name)
        url, credentials = await cluster_access(body, client, url)
        async with admins(url, credentials=credentials) as api:
            observed = await api.get(tenant_namespace.tenant_path(spec.tenant))
            calls = tenant_namespace.plan_tenant(spec, observed)
            await api.run(calls)
    except errors.OperatorError as exc:
        return _status(body, conditions.failed(type(exc).__name__.removesuffix("Error"), str(exc)))
    message = "created" if observed is None else ("drift corrected" if calls else "in line")
    return _status(body, conditions.ready(message), tenant=spec.tenant)


async def sync_namespace(body: dict[str, Any], client: kube.KubeClient, admins: AdminFactory) -> dict[str, Any]:
    problems = tenant_namespace.validate_namespace(body)
    if problems:
        return _status(body, conditions.invalid_spec(problems))
    spec = tenant_namespace.parse_namespace(body)
    try:
        url, _, _ = await resolve_cluster(body, client)
        url, credentials = await cluster_access(body, client, url)
        async with admins(url, credentials=credentials) as api:
            observed = await api.get(spec.path)
            calls = tenant_namespace.plan_namespace(spec, observed)
            await api.run(calls)
    except errors.OperatorError as exc:
        return _status(body, conditions.failed(type(exc).__name__.removesuffix("Error"), str(exc)))
    message = "created" if observed is None else ("drift corrected" if calls else "in line")
    return _status(body, conditions.ready(message), namespace=f"{spec.tenant}/{spec.namespace}")


async def delete_in_pulsar(body: dict[str, Any], client: kube.KubeClient, admins: AdminFactory) -> str:
    """Run the cleanup calls lifecyclePolicy asks for; returns what happened (for the log)."""
    kind = body.get("kind")
    if kind == "Tenant":
        tenant = tenant_namespace.parse_tenant(body)
        calls, what, policy = tenant_namespace.delete_tenant(tenant), f"tenant {tenant.tenant}", tenant.lifecycle_policy
    else:
        ns = tenant_namespace.parse_namespace(body)
        calls, what, policy = tenant_namespace.delete_namespace(ns), f"namespace {ns.tenant}/{ns.namespace}", ns.lifecycle_policy
    if not calls:
        return f"{what} kept in Pulsar ({policy})"
    url, _, _ = await resolve_cluster(body, client)
    url, credentials = await cluster_access(body, client, url)
    async with admins(url, credentials=credentials) as api:
        await api.run(calls)
    return f"{what} deleted in Pulsar"


async def reconcile_function(body: dict[str, Any], client: kube.KubeClient, config: OperatorConfig) -> dict[str, Any]:
    """Apply a Function's instances (StatefulSet, its ConfigMap and Service, the HPA) and return its status."""
    namespace = body["metadata"].get("namespace") or "default"
    spec = body.get("spec") or {}
    cluster_status = None
    ref = (spec.get("clusterRef") or {}).get("name")
    if ref and not (spec.get("pulsar") or {}).get("pulsarConfig"):
        cluster = await client.get(ObjectRef(naming.API_VERSION, "PulsarCluster", namespace, ref))
        cluster_status = ((cluster or {}).get("status") or {}) or None
    pulsar_config = None
    config_map = (spec.get("pulsar") or {}).get("pulsarConfig")
    if config_map and function_spec.needs_web_service_url(body):
        found = await client.get(ObjectRef("v1", "ConfigMap", namespace, str(config_map)))
        pulsar_config = ((found or {}).get("data") or {}) or None
    observed = await client.get(_sts_ref(namespace, function_reconcile.child_name(body)))
    plan = function_reconcile.reconcile(body, observed, image=config.function_image, cluster_status=cluster_status,
                                        now=now_iso(), pulsar_config=pulsar_config)
    if plan.objects or plan.deletions:
        await applier.apply(client, plan.objects, plan.deletions)
    return dict(plan.status)
