"""BookKeeper's cluster-wide admin endpoints (bookies and autorecovery), served by any bookie.

    GET    /api/v1/bookie/list_bookies?type=rw|ro&print_hostnames=true
           {"<bookie id>": "<host>" (null without print_hostnames)}; all bookies without type
    GET    /api/v1/autorecovery/who_is_auditor          {"Auditor": "<bookie id>", ...}; 404
    GET    /api/v1/autorecovery/list_under_replicated_ledger
           ?missingreplica=<bookie>&excludingmissingreplica=<bookie>&printmissingreplica=true
           [ledger ids], or {"<ledger id>": [missing replicas]} with printmissingreplica;
           404 "No under replicated ledgers found" when there are none (as BookKeeper)
    PUT    /api/v1/autorecovery/trigger_audit           the auditor audits now, without delay
    GET    /api/v1/autorecovery/lost_bookie_recovery_delay   "lostBookieRecoveryDelay value: N"
    PUT    /api/v1/autorecovery/lost_bookie_recovery_delay   {"delay_seconds": N}
    PUT    /api/v1/autorecovery/decommission            {"bookie_src": "host:port"}: drain it
           (404 for a bookie the cluster does not know)
    GET    /api/v1/autorecovery/decommission?bookie_src=host:port   drain progress
    DELETE /api/v1/autorecovery/decommission?bookie_src=host:port   remove the cookie of a
           stopped, drained bookie (BookKeeper's `decommissionbookie`); 409 otherwise

Refusals are 409 with {"error": reason}; bad requests 400.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import admin as recovery_admin


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    body = json.loads(raw) if raw else {}
    if not isinstance(body, dict):
        raise TypeError("expected a JSON object")
    return body


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() == "true"


def add_routes(app: web.Application, recovery: recovery_admin.AutoRecoveryAdmin) -> None:
    async def list_bookies(request: web.Request) -> web.Response:
        kind = request.query.get("type", "")
        if kind not in ("", "rw", "ro"):
            return _error(400, "type must be rw or ro")
        found = await recovery.list_bookies(kind or "all")
        hostnames = _flag(request, "print_hostnames")
        return web.json_response({b: (h if hostnames else None) for b, h in found.items()})

    async def who_is_auditor(request: web.Request) -> web.Response:
        auditor = await recovery.who_is_auditor()
        if auditor is None:
            return _error(404, "no auditor is elected")
        return web.json_response(auditor)

    async def list_under_replicated(request: web.Request) -> web.Response:
        found = await recovery.under_replicated(request.query.get("missingreplica"),
                                                request.query.get("excludingmissingreplica"))
        if not found:
            return web.Response(status=404, text="No under replicated ledgers found")
        if _flag(request, "printmissingreplica"):
            return web.json_response(found)
        return web.json_response([int(ledger_id) for ledger_id in found])

    async def trigger_audit(request: web.Request) -> web.Response:
        await recovery.trigger_audit()
        return web.json_response({"triggered": True})

    async def get_delay(request: web.Request) -> web.Response:
        delay = await recovery.lost_bookie_recovery_delay_s()
        return web.Response(text=f"lostBookieRecoveryDelay value: {delay}")

    async def set_delay(request: web.Request) -> web.Response:
        try:
            delay = (await _body(request))["delay_seconds"]
            if not isinstance(delay, int) or isinstance(delay, bool):
                raise TypeError("delay_seconds must be an integer")
            await recovery.set_lost_bookie_recovery_delay_s(delay)
        except (ValueError, KeyError, TypeError) as exc:
            return _error(400, f"expected {{\"delay_seconds\": int}}: {exc}")
        except recovery_admin.AdminRefusal as exc:
            return _error(400, str(exc))
        return web.Response(text=f"lostBookieRecoveryDelay value: {delay}")

    async def decommission(request: web.Request) -> web.Response:
        try:
            bookie = (await _body(request))["bookie_src"]
            if not isinstance(bookie, str) or not bookie:
                raise TypeError("bookie_src must be host:port")
        except (ValueError, KeyError, TypeError) as exc:
            return _error(400, f"expected {{\"bookie_src\": \"host:port\"}}: {exc}")
        try:
            status = await recovery.start_decommission(types.BookieId(bookie))
        except recovery_admin.UnknownBookieError as exc:
            return _error(404, str(exc))
        except recovery_admin.AdminRefusal as exc:
            return _error(409, str(exc))
        except errors.BookieUnavailableError as exc:
            return _error(503, str(exc))
        return web.json_response(status.to_json())

    def _bookie_param(request: web.Request) -> types.BookieId | None:
        bookie = request.query.get("bookie_src", "")
        return types.BookieId(bookie) if bookie else None

    async def decommission_status(request: web.Request) -> web.Response:
        bookie = _bookie_param(request)
        if bookie is None:
            return _error(400, "bookie_src=host:port is required")
        return web.json_response((await recovery.decommission_status(bookie)).to_json())

    async def remove_bookie(request: web.Request) -> web.Response:
        bookie = _bookie_param(request)
        if bookie is None:
            return _error(400, "bookie_src=host:port is required")
        try:
            await recovery.remove_bookie(bookie)
        except recovery_admin.AdminRefusal as exc:
            return _error(409, str(exc))
        return web.json_response({"bookie": bookie, "removed": True})

    app.router.add_get("/api/v1/bookie/list_bookies", list_bookies)
    app.router.add_get("/api/v1/autorecovery/who_is_auditor", who_is_auditor)
    app.router.add_get("/api/v1/autorecovery/list_under_replicated_ledger",
                       list_under_replicated)
    app.router.add_put("/api/v1/autorecovery/trigger_audit", trigger_audit)
    app.router.add_get("/api/v1/autorecovery/lost_bookie_recovery_delay", get_delay)
    app.router.add_put("/api/v1/autorecovery/lost_bookie_recovery_delay", set_delay)
    app.router.add_put("/api/v1/autorecovery/decommission", decommission)
    app.router.add_get("/api/v1/autorecovery/decommission", decommission_status)
    app.router.add_delete("/api/v1/autorecovery/decommission", remove_bookie)
