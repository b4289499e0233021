"""`/admin/v2/clusters/{cluster}/namespaceIsolationPolicies`: namespace isolation policies
(pulsar-admin ns-isolation-policy), with Apache's paths, JSON and statuses.

The policies of a cluster are one record, policy name -> NamespaceIsolationData, at
Apache's path; namespace/isolation.py validates them and decides placement, which the
namespace service applies when it assigns a bundle. Setting a policy unloads the
namespaces it names (`unloadBundles=true`, the default, as in Apache, unless the
policy's `unload_scope` is "none") so they are assigned again under it.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from pulsar_common import naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors
from pulsar_broker.namespace import isolation
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import rest

routes = web.RouteTableDef()

POLICIES = "/admin/v2/clusters/{cluster}/namespaceIsolationPolicies"


async def _check_cluster(request: web.Request, status: int) -> str:
    cluster = rest.check_name(request.match_info["cluster"], "Cluster")
    if cluster not in await rest.service(request).resources.list_clusters():
        error = errors.BrokerError(f"Cluster {cluster} does not exist.")
        error.http_status = status
        raise error
    return cluster


async def _stored(store: md.MetadataStore, cluster: str) -> tuple[dict[str, Any], int] | None:
    found = await store.get(isolation.record_path(cluster))
    if found is None:
        return None
    return dict(json.loads(found.value)), found.stat.version


async def _existing(request: web.Request, cluster: str) -> dict[str, Any]:
    stored = await _stored(rest.service(request).resources.store, cluster)
    if stored is None:
        raise errors.NotFoundError(f"NamespaceIsolationPolicies for cluster {cluster} does not exist")
    return stored[0]


async def _change(store: md.MetadataStore, cluster: str, name: str,
                  policy: dict[str, Any] | None) -> None:
    """Set (or with None, delete) one policy, compare-and-set on the cluster's record."""
    while True:
        stored = await _stored(store, cluster)
        policies, version = stored if stored is not None else ({}, md.VERSION_ABSENT)
        if policy is None:
            policies.pop(name, None)
        else:
            policies[name] = policy
        try:
            await store.put(isolation.record_path(cluster),
                            json.dumps(policies, sort_keys=True).encode(), version)
            return
        except (md_errors.BadVersionError, md_errors.AlreadyExistsError):
            continue


@routes.get(POLICIES)
async def get_policies(request: web.Request) -> web.Response:
    cluster = await _check_cluster(request, 404)
    return rest.ok_json(await _existing(request, cluster))


@routes.get(POLICIES + "/brokers")
async def brokers_with_policies(request: web.Request) -> web.Response:
    cluster = await _check_cluster(request, 412)
    policies = await _existing(request, cluster)
    live = await rest.service(request).namespaces.live_brokers()
    return rest.ok_json([isolation.broker_data(policies, broker) for broker in sorted(live)])


@routes.get(POLICIES + "/brokers/{broker}")
async def broker_with_policies(request: web.Request) -> web.Response:
    cluster = await _check_cluster(request, 412)
    policies = await _existing(request, cluster)
    return rest.ok_json(isolation.broker_data(policies, request.match_info["broker"]))


@routes.get(POLICIES + "/{policy}")
async def get_policy(request: web.Request) -> web.Response:
    cluster = await _check_cluster(request, 412)
    name = request.match_info["policy"]
    policies = await _existing(request, cluster)
    if name not in policies:
        raise errors.NotFoundError(
            f"Cannot find NamespaceIsolationPolicy {name} for cluster {cluster}")
    return rest.ok_json(policies[name])


@routes.post(POLICIES + "/{policy}")
async def set_policy(request: web.Request) -> web.Response:
    cluster = await _check_cluster(request, 412)
    name = request.match_info["policy"]
    body = await rest.body_json(request)
    try:
        policy = isolation.validate(body)
    except isolation.InvalidIsolationDataError as exc:
        raise errors.InvalidRequestError(
            f"Invalid format of input policy data. policy: {name}; data: {json.dumps(body)}"
        ) from exc
    service = rest.service(request)
    await _change(service.resources.store, cluster, name, policy)
    if rest.query_flag(request, "unloadBundles", default=True) and \
            policy.get("unload_scope") != "none":
        await _unload_named(service, cluster, policy)
    return rest.no_content()


@routes.delete(POLICIES + "/{policy}")
async def delete_policy(request: web.Request) -> web.Response:
    cluster = await _check_cluster(request, 412)
    await _change(rest.service(request).resources.store, cluster, request.match_info["policy"],
                  None)
    return rest.no_content()


async def _unload_named(service: BrokerService, cluster: str, policy: dict[str, Any]) -> None:
    """Unload every namespace of this cluster the policy names, bundle by bundle on its
    owner, so the next lookups place them under the policy."""
    for tenant in await service.resources.list_tenants():
        for full_name in await service.resources.list_namespaces(tenant):
            ns = naming.NamespaceName.parse(full_name)
            if isolation.policy_for({"p": policy}, str(ns)) is None:
                continue
            clusters = (await service.resources.get_policies(ns)).get("replication_clusters")
            if clusters and cluster not in clusters:
                continue
            for bundle in await service.namespaces.bundles(ns):
                owner = await service.namespaces.owner_of(bundle)
                if owner is None:
                    continue
                if owner == service.namespaces.me:
                    await service.unload_bundle(bundle)
                else:
                    await service.namespaces.forward(
                        "PUT", owner, f"/admin/v2/namespaces/{ns}/{bundle.range}/unload")
