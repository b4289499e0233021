"""`/admin/v2/clusters`: the clusters known to this Pulsar instance (ClusterData records),
their peer clusters (`peerClusterNames`, GET|POST `.../{cluster}/peers`) and their failure
domains (named groups of brokers, Apache's FailureDomain: `{"brokers": [...]}`).
A broker belongs to at most one domain of a cluster. Domains and peers are stored and served;
the load balancer does not place bundles by domains (Apache's failureDomainsEnabled) and,
without geo-replication, no lookup consults the peers."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from pulsar_broker import errors
from pulsar_broker.namespace import isolation
from pulsar_broker.web import rest

routes = web.RouteTableDef()

#: ClusterData fields Apache always renders; stored values override them.
CLUSTER_DATA_DEFAULTS: dict[str, Any] = {
    "serviceUrl": None,
    "serviceUrlTls": None,
    "brokerServiceUrl": None,
    "brokerServiceUrlTls": None,
    "proxyServiceUrl": None,
    "proxyProtocol": None,
    "authenticationPlugin": None,
    "authenticationParameters": None,
    "peerClusterNames": None,
    "brokerClientTlsEnabled": False,
    "tlsAllowInsecureConnection": False,
}


def _cluster_data(request_body: Any) -> dict[str, Any]:
    if request_body is None:
        return {}
    if not isinstance(request_body, dict):
        raise errors.InvalidRequestError("Cluster data must be a JSON object")
    return request_body


@routes.get("/admin/v2/clusters")
async def list_clusters(request: web.Request) -> web.Response:
    return rest.ok_json(await rest.service(request).resources.list_clusters())


@routes.get("/admin/v2/clusters/{cluster}")
async def get_cluster(request: web.Request) -> web.Response:
    name = rest.check_name(request.match_info["cluster"], "Cluster")
    data = await rest.service(request).resources.get_cluster(name)
    return rest.ok_json({**CLUSTER_DATA_DEFAULTS, **data})


@routes.put("/admin/v2/clusters/{cluster}")
async def create_cluster(request: web.Request) -> web.Response:
    name = rest.check_name(request.match_info["cluster"], "Cluster")
    data = _cluster_data(await rest.body_json(request))
    await rest.service(request).resources.create_cluster(name, data)
    return rest.no_content()


@routes.post("/admin/v2/clusters/{cluster}")
async def update_cluster(request: web.Request) -> web.Response:
    name = rest.check_name(request.match_info["cluster"], "Cluster")
    data = _cluster_data(await rest.body_json(request))
    await rest.service(request).resources.update_cluster(name, data)
    return rest.no_content()


@routes.delete("/admin/v2/clusters/{cluster}")
async def delete_cluster(request: web.Request) -> web.Response:
    name = rest.check_name(request.match_info["cluster"], "Cluster")
    service = rest.service(request)
    # As Apache: a cluster with namespace isolation policies is not empty; an empty record
    # of them goes with the cluster.
    isolation_path = isolation.record_path(name)
    found = await service.resources.store.get(isolation_path)
    if found is not None:
        if json.loads(found.value):
            raise errors.PreconditionFailedError("Cluster not empty")
        await service.resources.store.delete(isolation_path)
    await service.resources.delete_cluster(name)
    return rest.no_content()


@routes.get("/admin/v2/clusters/{cluster}/peers")
async def get_peer_clusters(request: web.Request) -> web.Response:
    """The cluster's peerClusterNames; none set answers 204, as Apache's null does."""
    name = rest.check_name(request.match_info["cluster"], "Cluster")
    peers = (await rest.service(request).resources.get_cluster(name)).get("peerClusterNames")
    return rest.no_content() if peers is None else rest.ok_json(peers)


@routes.post("/admin/v2/clusters/{cluster}/peers")
async def set_peer_clusters(request: web.Request) -> web.Response:
    """Replace the cluster's peers with the body's JSON array of cluster names (412 for
    the cluster itself or one that does not exist); no body unsets them."""
    name = rest.check_name(request.match_info["cluster"], "Cluster")
    body = await rest.body_json(request)
    if body is not None and (not isinstance(body, list)
                             or not all(isinstance(p, str) for p in body)):
        raise errors.InvalidRequestError("The peer clusters must be a JSON array of names")
    peers = None if body is None else list(dict.fromkeys(body))
    resources = rest.service(request).resources
    data = await resources.get_cluster(name)
    known = set(await resources.list_clusters())
    for peer in peers or []:
        if peer.lower() == name.lower():
            raise errors.PreconditionFailedError(f"{name} itself can't be part of peer-list")
        if peer not in known:
            raise errors.PreconditionFailedError(f"Peer cluster {peer} does not exist")
    await resources.update_cluster(name, {**data, "peerClusterNames": peers})
    return rest.no_content()


def _domain_path(request: web.Request) -> tuple[str, str]:
    cluster = rest.check_name(request.match_info["cluster"], "Cluster")
    return cluster, rest.check_name(request.match_info["domain"], "Domain")


def _failure_domain(body: Any) -> dict[str, list[str]]:
    brokers = body.get("brokers") if isinstance(body, dict) else None
    if not isinstance(brokers, list) or not all(isinstance(b, str) and b for b in brokers):
        raise errors.InvalidRequestError(
            'A failure domain must be a JSON object {"brokers": ["host:port", ...]}')
    return {"brokers": sorted(set(brokers))}


@routes.get("/admin/v2/clusters/{cluster}/failureDomains")
async def list_failure_domains(request: web.Request) -> web.Response:
    cluster = rest.check_name(request.match_info["cluster"], "Cluster")
    return rest.ok_json(await rest.service(request).resources.list_failure_domains(cluster))


@routes.get("/admin/v2/clusters/{cluster}/failureDomains/{domain}")
async def get_failure_domain(request: web.Request) -> web.Response:
    cluster, name = _domain_path(request)
    return rest.ok_json(await rest.service(request).resources.get_failure_domain(cluster, name))


@routes.post("/admin/v2/clusters/{cluster}/failureDomains/{domain}")
async def set_failure_domain(request: web.Request) -> web.Response:
    cluster, name = _domain_path(request)
    domain = _failure_domain(await rest.body_json(request))
    resources = rest.service(request).resources
    for other, existing in (await resources.list_failure_domains(cluster)).items():
        shared = set(existing.get("brokers", [])) & set(domain["brokers"])
        if other != name and shared:
            raise errors.ConflictError(
                f"Domain {other} already has the broker(s) {', '.join(sorted(shared))}")
    await resources.set_failure_domain(cluster, name, domain)
    return rest.no_content()


@routes.delete("/admin/v2/clusters/{cluster}/failureDomains/{domain}")
async def delete_failure_domain(request: web.Request) -> web.Response:
    cluster, name = _domain_path(request)
    await rest.service(request).resources.delete_failure_domain(cluster, name)
    return rest.no_content()
