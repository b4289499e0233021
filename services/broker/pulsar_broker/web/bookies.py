"""`/admin/v2/bookies`: the bookies registered in the metadata store, and their rack placement.

`/all` lists the bookies registered (the standalone's embedded bookie is not
registered, so a standalone lists none). `racks-info` stores Apache's
BookiesRackConfiguration, `{group: {bookie: {"rack": ..., "hostname": ...}}}`,
under `/bookies` as Apache does; it is stored and served, and the ensemble
placement does not use it yet.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from pulsar_bookie.service import registration
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors
from pulsar_broker.web import rest

routes = web.RouteTableDef()

RACKS_PATH = "/bookies"
DEFAULT_GROUP = "default"


async def _racks(request: web.Request) -> tuple[dict[str, dict[str, Any]], int | None]:
    found = await rest.service(request).resources.store.get(RACKS_PATH)
    if found is None or not found.value:
        return {}, None
    try:
        racks = json.loads(found.value)
    except ValueError:
        racks = {}
    return (racks if isinstance(racks, dict) else {}), found.stat.version


@routes.get("/admin/v2/bookies/all")
async def list_bookies(request: web.Request) -> web.Response:
    bookies = await registration.list_bookies(rest.service(request).resources.store)
    return rest.ok_json({"bookies": [{"bookieId": info.bookie_id} for info in bookies]})


@routes.get("/admin/v2/bookies/racks-info")
async def racks_info(request: web.Request) -> web.Response:
    return rest.ok_json((await _racks(request))[0])


@routes.get("/admin/v2/bookies/racks-info/{bookie}")
async def bookie_rack(request: web.Request) -> web.Response:
    bookie = request.match_info["bookie"]
    for group in (await _racks(request))[0].values():
        if bookie in group:
            return rest.ok_json(group[bookie])
    raise errors.NotFoundError(f"Bookie address {bookie} not found")


@routes.post("/admin/v2/bookies/racks-info/{bookie}")
async def set_bookie_rack(request: web.Request) -> web.Response:
    bookie = request.match_info["bookie"]
    group = request.query.get("group", DEFAULT_GROUP)
    rack = request.query.get("rack", "")
    if not rack:
        raise errors.InvalidRequestError("rack is required")
    racks, version = await _racks(request)
    for members in racks.values():
        members.pop(bookie, None)
    info = {"rack": rack}
    if request.query.get("hostname"):
        info["hostname"] = request.query["hostname"]
    racks.setdefault(group, {})[bookie] = info
    await _store(request, {g: m for g, m in racks.items() if m}, version)
    return rest.no_content()


@routes.delete("/admin/v2/bookies/racks-info/{bookie}")
async def delete_bookie_rack(request: web.Request) -> web.Response:
    bookie = request.match_info["bookie"]
    racks, version = await _racks(request)
    if not any(bookie in members for members in racks.values()):
        raise errors.NotFoundError(f"Bookie address {bookie} not found")
    for members in racks.values():
        members.pop(bookie, None)
    await _store(request, {g: m for g, m in racks.items() if m}, version)
    return rest.no_content()


async def _store(request: web.Request, racks: dict[str, Any], version: int | None) -> None:
    store = rest.service(request).resources.store
    try:
        await store.put(RACKS_PATH, json.dumps(racks, sort_keys=True).encode(),
                        md.VERSION_ABSENT if version is None else version)
    except (md_errors.BadVersionError, md_errors.AlreadyExistsError,
            md_errors.NotFoundError) as exc:
        raise errors.ConflictError("Rack placement was modified concurrently") from exc
