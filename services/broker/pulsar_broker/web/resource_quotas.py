"""`/admin/v2/resource-quotas`: the default resource quota of a bundle and per-bundle quotas
(pulsar-admin resource-quotas), with Apache's paths and ResourceQuota JSON.

Stored only: Apache's modular load manager stopped using these quotas, and this broker's
load manager does not read them either. They are kept where Apache keeps them
(/loadbalance/resource-quota/default and /loadbalance/resource-quota/namespace/<bundle>);
a bundle without its own quota answers the default, a cluster without a default answers
Apache's initial one.
"""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web

from pulsar_broker import errors
from pulsar_broker.web import rest

routes = web.RouteTableDef()

DEFAULT_PATH = "/loadbalance/resource-quota/default"
BUNDLE_ROOT = "/loadbalance/resource-quota/namespace"

#: Apache's initial default quota (BundlesQuotas.INITIAL_QUOTA).
INITIAL_QUOTA: dict[str, Any] = {"msgRateIn": 40.0, "msgRateOut": 120.0, "bandwidthIn": 100000.0,
                                 "bandwidthOut": 300000.0, "memory": 80.0, "dynamic": True}
#: What a field left out of a posted quota is (Apache's ResourceQuota constructor).
_UNSET: dict[str, Any] = {"msgRateIn": 0.0, "msgRateOut": 0.0, "bandwidthIn": 0.0,
                          "bandwidthOut": 0.0, "memory": 0.0, "dynamic": True}

BUNDLE = "/admin/v2/resource-quotas/{tenant}/{namespace}/{bundle}"


def resource_quota(body: Any) -> dict[str, Any]:
    """A posted ResourceQuota: numbers for the rates and memory, a boolean `dynamic`."""
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("ResourceQuota must be a JSON object")
    unknown = set(body) - set(_UNSET)
    if unknown:
        raise errors.InvalidRequestError(f"ResourceQuota: unknown fields {', '.join(sorted(unknown))}")
    quota = dict(_UNSET)
    for key, value in body.items():
        if key == "dynamic":
            if not isinstance(value, bool):
                raise errors.InvalidRequestError("dynamic must be true or false")
            quota[key] = value
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise errors.InvalidRequestError(f"{key} must be a number")
        else:
            quota[key] = float(value)
    return quota


async def _read(request: web.Request, path: str) -> dict[str, Any] | None:
    found = await rest.service(request).resources.store.get(path)
    return None if found is None else dict(json.loads(found.value))


async def _write(request: web.Request, path: str, quota: dict[str, Any]) -> None:
    await rest.service(request).resources.store.put(path, json.dumps(quota).encode())


async def _bundle_path(request: web.Request) -> str:
    service = rest.service(request)
    ns = rest.namespace_name(request)
    await service.check_namespace(ns)
    bundle = await service.namespaces.find_bundle(ns, request.match_info["bundle"])
    return f"{BUNDLE_ROOT}/{bundle.namespace}/{bundle.range}"


@routes.get("/admin/v2/resource-quotas")
async def get_default(request: web.Request) -> web.Response:
    return rest.ok_json(await _read(request, DEFAULT_PATH) or INITIAL_QUOTA)


@routes.post("/admin/v2/resource-quotas")
async def set_default(request: web.Request) -> web.Response:
    await _write(request, DEFAULT_PATH, resource_quota(await rest.body_json(request)))
    return rest.no_content()


@routes.get(BUNDLE)
async def get_bundle_quota(request: web.Request) -> web.Response:
    quota = await _read(request, await _bundle_path(request))
    if quota is None:
        quota = await _read(request, DEFAULT_PATH) or INITIAL_QUOTA
    return rest.ok_json(quota)


@routes.post(BUNDLE)
async def set_bundle_quota(request: web.Request) -> web.Response:
    path = await _bundle_path(request)
    await _write(request, path, resource_quota(await rest.body_json(request)))
    return rest.no_content()


@routes.delete(BUNDLE)
async def reset_bundle_quota(request: web.Request) -> web.Response:
    path = await _bundle_path(request)
    store = rest.service(request).resources.store
    if await store.get(path) is not None:
        await store.delete(path)
    return rest.no_content()
