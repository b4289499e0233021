"""`/admin/v2/broker-stats/...`: this broker's load report, and the load manager's lifetime.

`install` gives the app a LoadManager (pulsar_broker.loadbalance.manager) that
runs while the app runs: it publishes this broker's load report and, on the
leader with loadBalancerEnabled=true, plans unloads and splits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from aiohttp import web

from pulsar_broker.loadbalance import manager
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import rest

routes = web.RouteTableDef()

LOAD_MANAGER = web.AppKey("load_manager", manager.LoadManager)


@routes.get("/admin/v2/broker-stats/load-report")
async def load_report(request: web.Request) -> web.Response:
    """Apache's LocalBrokerData of this broker: its latest sample of resource usage, rates
    and per-bundle stats."""
    load_manager = request.app[LOAD_MANAGER]
    sample = load_manager.last_report
    if sample is None:
        await load_manager.publish(force=True)
        sample = load_manager.last_report
    assert sample is not None
    return rest.ok_json(sample.to_json())


def install(app: web.Application, service: BrokerService) -> None:
    load_manager = manager.LoadManager(service)
    app[LOAD_MANAGER] = load_manager
    app.router.add_routes(routes)

    async def running(app: web.Application) -> AsyncIterator[None]:
        await load_manager.start()
        yield
        await load_manager.close()

    app.cleanup_ctx.append(running)
