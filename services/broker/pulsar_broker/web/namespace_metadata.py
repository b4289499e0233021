"""Namespace metadata served as Apache's admin API does: key/value properties, the
anti-affinity group and the bookie-affinity group.

All three live in the namespace's policies record and go with it when the
namespace is deleted. Properties are the user's own labels. The two groups
are stored and answered only: bundle placement and bookie selection do not
read them yet (docs/compatibility.md says so). Apache keeps the groups in a
separate local-policies record (`namespaceAntiAffinityGroup`,
`bookieAffinityGroup`); here they are fields of the policies record with the
same names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web
from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.web import rest, topic_properties

routes = web.RouteTableDef()

NS = "/admin/v2/namespaces/{tenant}/{namespace}"
ANTI_AFFINITY_FIELD = "namespaceAntiAffinityGroup"
BOOKIE_AFFINITY_FIELD = "bookieAffinityGroup"


async def _policies(request: web.Request) -> dict[str, Any]:
    return await rest.service(request).resources.get_policies(rest.namespace_name(request))


async def _change(request: web.Request, change: Callable[[dict[str, Any]], Any]) -> Any:
    """Apply change to the namespace's policies record and store it; returns what change
    returned."""
    ns = rest.namespace_name(request)
    resources = rest.service(request).resources
    policies = await resources.get_policies(ns)
    result = change(policies)
    await resources.set_policies(ns, policies)
    return result


def _text(value: str) -> web.Response:
    """A bare string body, as Apache's resources answer a String (not a JSON string)."""
    return web.Response(text=value, content_type="application/json")


def _properties(policies: dict[str, Any]) -> dict[str, str]:
    properties = policies.get("properties")
    if not isinstance(properties, dict):
        properties = {}
        policies["properties"] = properties
    return properties


# Properties

@routes.put(NS + "/property/{key}/{value}")
async def set_property(request: web.Request) -> web.Response:
    key, value = request.match_info["key"], request.match_info["value"]
    await _change(request, lambda p: _properties(p).__setitem__(key, value))
    return rest.no_content()


@routes.get(NS + "/property/{key}")
async def get_property(request: web.Request) -> web.Response:
    value = _properties(await _policies(request)).get(request.match_info["key"])
    return rest.no_content() if value is None else _text(value)


@routes.delete(NS + "/property/{key}")
async def remove_property(request: web.Request) -> web.Response:
    """Answers the value removed, as Apache does (204 when the key was not set)."""
    key = request.match_info["key"]
    removed = await _change(request, lambda p: _properties(p).pop(key, None))
    return rest.no_content() if removed is None else _text(removed)


@routes.put(NS + "/properties")
async def set_properties(request: web.Request) -> web.Response:
    """Adds or replaces the keys of the JSON object body; other keys stay."""
    body = await rest.body_json(request)
    if body is None:
        raise errors.InvalidRequestError("Properties must be a JSON object of strings")
    # Read as the topic routes read theirs (Apache's Map<String, String>: scalars as text).
    given = topic_properties.properties_body(body)
    await _change(request, lambda p: _properties(p).update(given))
    return rest.no_content()


@routes.get(NS + "/properties")
async def get_properties(request: web.Request) -> web.Response:
    return rest.ok_json(_properties(await _policies(request)))


@routes.delete(NS + "/properties")
async def clear_properties(request: web.Request) -> web.Response:
    await _change(request, lambda p: p.__setitem__("properties", {}))
    return rest.no_content()


# Anti-affinity group

@routes.post(NS + "/antiAffinity")
async def set_anti_affinity_group(request: web.Request) -> web.Response:
    group = await rest.body_json(request)
    if not isinstance(group, str) or not group.strip():
        raise errors.PreconditionFailedError("antiAffinityGroup can't be empty")
    await _change(request, lambda p: p.__setitem__(ANTI_AFFINITY_FIELD, group))
    return rest.no_content()


@routes.get(NS + "/antiAffinity")
async def get_anti_affinity_group(request: web.Request) -> web.Response:
    group = (await _policies(request)).get(ANTI_AFFINITY_FIELD)
    return rest.no_content() if group is None else _text(group)


@routes.delete(NS + "/antiAffinity")
async def remove_anti_affinity_group(request: web.Request) -> web.Response:
    await _change(request, lambda p: p.pop(ANTI_AFFINITY_FIELD, None))
    return rest.no_content()


async def anti_affinity_namespaces(request: web.Request) -> web.Response:
    """The namespaces of ?tenant= in the group (compared ignoring case, as Apache does)."""
    cluster, group = request.match_info["cluster"], request.match_info["group"]
    tenant = request.query.get("tenant")
    if not group.strip():
        raise errors.PreconditionFailedError("anti-affinity group can't be empty.")
    if not tenant:
        raise errors.PreconditionFailedError("Tenant should not be null")
    resources = rest.service(request).resources
    if cluster not in await resources.list_clusters():
        raise errors.PreconditionFailedError(f"Cluster {cluster} does not exist.")
    if not await resources.tenant_exists(tenant):
        raise errors.NotFoundError("Tenant does not exist")
    members = []
    for name in await resources.list_namespaces(tenant):
        try:
            stored = (await resources.get_policies(naming.NamespaceName.parse(name))).get(
                ANTI_AFFINITY_FIELD)
        except errors.NotFoundError:
            continue  # deleted while listing
        if isinstance(stored, str) and stored.lower() == group.lower():
            members.append(name)
    return rest.ok_json(members)


# Bookie-affinity group

def _bookie_affinity(body: Any) -> dict[str, str]:
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("Bookie affinity group must be a JSON object")
    primary = body.get("bookkeeperAffinityGroupPrimary")
    secondary = body.get("bookkeeperAffinityGroupSecondary")
    if not isinstance(primary, str) or not primary.strip():
        raise errors.InvalidRequestError("bookkeeperAffinityGroupPrimary must not be empty")
    if secondary is not None and not isinstance(secondary, str):
        raise errors.InvalidRequestError("bookkeeperAffinityGroupSecondary must be a string")
    group = {"bookkeeperAffinityGroupPrimary": primary}
    if secondary:
        group["bookkeeperAffinityGroupSecondary"] = secondary
    return group


@routes.post(NS + "/persistence/bookieAffinity")
async def set_bookie_affinity_group(request: web.Request) -> web.Response:
    group = _bookie_affinity(await rest.body_json(request))
    await _change(request, lambda p: p.__setitem__(BOOKIE_AFFINITY_FIELD, group))
    return rest.no_content()


@routes.get(NS + "/persistence/bookieAffinity")
async def get_bookie_affinity_group(request: web.Request) -> web.Response:
    group = (await _policies(request)).get(BOOKIE_AFFINITY_FIELD)
    return rest.no_content() if group is None else rest.ok_json(group)


@routes.delete(NS + "/persistence/bookieAffinity")
async def remove_bookie_affinity_group(request: web.Request) -> web.Response:
    await _change(request, lambda p: p.pop(BOOKIE_AFFINITY_FIELD, None))
    return rest.no_content()


# Registered last so that a namespace's own routes win over this broader pattern.
LAST_ROUTES = [web.get("/admin/v2/namespaces/{cluster}/antiAffinity/{group}",
                       anti_affinity_namespaces)]
