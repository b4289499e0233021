"""`/admin/v2/tenants`: tenants and their TenantInfo (admin roles, allowed clusters)."""

from __future__ import annotations

from typing import Any

from aiohttp import web
from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.web import namespaces, rest

routes = web.RouteTableDef()


async def _tenant_info(request: web.Request) -> dict[str, Any]:
    """TenantInfo from the body; every allowed cluster must exist (412 otherwise)."""
    body = await rest.body_json(request, {})
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("Tenant info must be a JSON object")
    info = {
        "adminRoles": _names(body.get("adminRoles"), "adminRoles"),
        "allowedClusters": _names(body.get("allowedClusters"), "allowedClusters"),
    }
    known = set(await rest.service(request).resources.list_clusters())
    missing = [c for c in info["allowedClusters"] if c not in known]
    if missing:
        raise errors.PreconditionFailedError(f"Clusters {missing} do not exist")
    return info


def _names(value: Any, field: str) -> list[str]:
    """A TenantInfo set of strings: a JSON array of strings (Apache's binding refuses
    anything else, such as a string it would otherwise read as a list of characters)."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise errors.InvalidRequestError(f"{field} must be a JSON array of strings")
    return list(dict.fromkeys(value))


@routes.get("/admin/v2/tenants")
async def list_tenants(request: web.Request) -> web.Response:
    return rest.ok_json(await rest.service(request).resources.list_tenants())


@routes.get("/admin/v2/tenants/{tenant}")
async def get_tenant(request: web.Request) -> web.Response:
    tenant = rest.check_name(request.match_info["tenant"], "Tenant")
    info = await rest.service(request).resources.get_tenant(tenant)
    return rest.ok_json({"adminRoles": [], "allowedClusters": [], **info})


@routes.put("/admin/v2/tenants/{tenant}")
async def create_tenant(request: web.Request) -> web.Response:
    tenant = rest.check_name(request.match_info["tenant"], "Tenant")
    info = await _tenant_info(request)
    await rest.service(request).resources.create_tenant(tenant, info)
    return rest.no_content()


@routes.post("/admin/v2/tenants/{tenant}")
async def update_tenant(request: web.Request) -> web.Response:
    tenant = rest.check_name(request.match_info["tenant"], "Tenant")
    info = await _tenant_info(request)
    await rest.service(request).resources.update_tenant(tenant, info)
    return rest.no_content()


@routes.delete("/admin/v2/tenants/{tenant}")
async def delete_tenant(request: web.Request) -> web.Response:
    tenant = rest.check_name(request.match_info["tenant"], "Tenant")
    service = rest.service(request)
    resources = service.resources
    if not await resources.tenant_exists(tenant):
        raise errors.NotFoundError("Tenant does not exist")
    if rest.query_flag(request, "force"):
        for ns in await resources.list_namespaces(tenant):
            await namespaces.remove_namespace(service, naming.NamespaceName.parse(ns), force=True)
    # Apache answers 409 Conflict here (its RestException for a tenant with namespaces).
    if await resources.list_namespaces(tenant):
        raise errors.ConflictError("The tenant still has active namespaces")
    await resources.delete_tenant(tenant)
    return rest.no_content()
