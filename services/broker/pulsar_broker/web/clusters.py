"""`/admin/v2/clusters`: the clusters known to this Pulsar instance (ClusterData records)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from pulsar_broker import errors
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
    await rest.service(request).resources.delete_cluster(name)
    return rest.no_content()
