"""The bookie's HTTP endpoint (httpServerPort): health, state, ledgers, metrics, autorecovery.

    GET /heartbeat                     200 "OK" while the process runs (liveness)
    GET /api/v1/bookie/is_ready        200 once the bookie serves, 503 otherwise (readiness)
    GET /api/v1/bookie/state           {"running", "readOnly", "shuttingDown", ...}
    GET /api/v1/bookie/state/readonly  {"readOnly": bool}
    PUT /api/v1/bookie/state/readonly  {"readOnly": true|false}: force read-only on or off
    GET /api/v1/bookie/list_ledgers    {"<ledger id>": {"lastAddConfirmed", "lastEntryId", "fenced"}}
    GET /metrics                       Prometheus text

With a metadata store (a registered bookie, or `pulsar autorecovery`), the
cluster-wide endpoints of BookKeeper's admin API as well (autorecovery_http):
list_bookies, who_is_auditor, list_under_replicated_ledger, trigger_audit,
lost_bookie_recovery_delay and decommission.
"""

from __future__ import annotations

import asyncio
import json
import typing
from typing import Any, Protocol

import prometheus_client
from aiohttp import web

from pulsar_bookie.autorecovery import admin as recovery_admin
from pulsar_bookie.service import autorecovery_http


class BookieAdmin(Protocol):
    """What the endpoint needs from the running bookie."""

    @property
    def ready(self) -> bool: ...

    def state(self) -> dict[str, Any]: ...

    async def ledgers(self) -> dict[str, dict[str, Any]]: ...

    async def force_read_only(self, read_only: bool) -> None: ...

    def metrics_text(self) -> bytes: ...


def build_app(admin: BookieAdmin | None,
              recovery: recovery_admin.AutoRecoveryAdmin | None = None) -> web.Application:
    """The routes of a bookie (admin) and of the cluster's autorecovery (recovery)."""
    app = web.Application()
    if admin is not None:
        add_bookie_routes(app, admin)
    else:
        app.router.add_get("/heartbeat", _heartbeat)
    if recovery is not None:
        autorecovery_http.add_routes(app, recovery)
    return app


async def _heartbeat(request: web.Request) -> web.Response:
    return web.Response(text="OK\n")


def add_bookie_routes(app: web.Application, admin: BookieAdmin) -> None:
    async def heartbeat(request: web.Request) -> web.Response:
        return web.Response(text="OK\n")

    async def is_ready(request: web.Request) -> web.Response:
        if admin.ready:
            return web.Response(text="OK\n")
        return web.Response(status=503, text="Bookie is not ready\n")

    async def state(request: web.Request) -> web.Response:
        return web.json_response(admin.state())

    async def set_read_only(request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())
            wanted = body["readOnly"]
            if not isinstance(wanted, bool):
                raise TypeError("readOnly must be true or false")
        except (ValueError, KeyError, TypeError) as exc:
            return web.json_response({"error": f"expected {{\"readOnly\": bool}}: {exc}"},
                                     status=400)
        await admin.force_read_only(wanted)
        return web.json_response(admin.state())

    async def get_read_only(request: web.Request) -> web.Response:
        return web.json_response({"readOnly": bool(admin.state()["readOnly"])})

    async def list_ledgers(request: web.Request) -> web.Response:
        return web.json_response(await admin.ledgers())

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(
            body=admin.metrics_text(),
            headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST},
        )

    app.router.add_get("/heartbeat", heartbeat)
    app.router.add_get("/api/v1/bookie/is_ready", is_ready)
    app.router.add_get("/api/v1/bookie/state", state)
    app.router.add_get("/api/v1/bookie/state/readonly", get_read_only)
    app.router.add_put("/api/v1/bookie/state/readonly", set_read_only)
    app.router.add_get("/api/v1/bookie/list_ledgers", list_ledgers)
    app.router.add_get("/metrics", metrics)


class HttpEndpoint:
    """The aiohttp runner around build_app."""

    def __init__(self, admin: BookieAdmin | None,
                 recovery: recovery_admin.AutoRecoveryAdmin | None = None) -> None:
        self._runner = web.AppRunner(build_app(admin, recovery), access_log=None)
        self._site: web.TCPSite | None = None

    async def start(self, host: str, port: int) -> None:
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, host, port, reuse_address=True)
        await self._site.start()

    @property
    def port(self) -> int:
        assert self._site is not None
        server = typing.cast(asyncio.Server, self._site._server)
        return int(server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        await self._runner.cleanup()
