"""The proxy's HTTP side on webServicePort.

- `/admin/...` and `/lookup/...` are forwarded to a broker; the broker's
  redirects to the broker that serves a topic are followed here (method and
  body kept), so a client sees one answer from the proxy.
- `/metrics` is the proxy's own (connections, bytes, lookups);
  `/metrics/broker/<broker-id>` is one broker's (ids as `/admin/v2/brokers/<cluster>`
  lists them), for clusters whose brokers are not reachable from outside.
- `/status.html` answers OK while the proxy runs (and, with `statusFilePath`,
  while that file exists, as Apache's proxy does for taking it out of rotation).
"""

from __future__ import annotations

import os
import time
import typing
from collections.abc import Awaitable, Callable

import prometheus_client
from aiohttp import web
from prometheus_client import registry
from pulsar_common import http_relay
from pulsar_common.auth.errors import AuthenticationError

if typing.TYPE_CHECKING:
    from pulsar_proxy.service import ProxyService

SERVICE_KEY: web.AppKey[ProxyService] = web.AppKey("service")
REGISTRY_KEY = web.AppKey("registry", registry.CollectorRegistry)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def authenticate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """With authenticationEnabled, every request but /status.html proves a role (Bearer,
    Basic, or the client certificate of the HTTPS port) or gets 401. The Authorization
    header then goes on to the broker, which authenticates and authorizes it again."""
    authentication = request.app[SERVICE_KEY].identity.authentication
    if authentication is None or request.path == "/status.html":
        return await handler(request)
    ssl_object = request.transport.get_extra_info("ssl_object") if request.transport else None
    certificate = ssl_object.getpeercert() if ssl_object is not None else None
    try:
        given = authentication.http_credentials(request.headers.get("Authorization"),
                                                certificate or None)
        authentication.authenticate(given, time.time())
    except AuthenticationError as exc:
        return web.json_response({"reason": f"Authentication required: {exc}"}, status=401)
    return await handler(request)


def create_app(service: ProxyService, metrics: registry.CollectorRegistry) -> web.Application:
    app = web.Application(client_max_size=service.conf.max_http_request_body_bytes,
                          middlewares=[authenticate])
    app[SERVICE_KEY] = service
    app[REGISTRY_KEY] = metrics
    app.router.add_get("/status.html", status)
    app.router.add_get("/metrics", own_metrics)
    app.router.add_get("/metrics/", own_metrics)
    app.router.add_get("/metrics/broker/{broker_id}", broker_metrics)
    app.router.add_route("*", "/admin/{tail:.*}", forward)
    app.router.add_route("*", "/lookup/{tail:.*}", forward)
    return app


async def status(request: web.Request) -> web.Response:
    path = request.app[SERVICE_KEY].conf.status_file_path
    if path and not os.path.exists(path):
        return web.Response(status=404, text="Status file not found\n")
    return web.Response(text="OK")


async def own_metrics(request: web.Request) -> web.Response:
    body = prometheus_client.generate_latest(request.app[REGISTRY_KEY])
    return web.Response(body=body, headers={"Content-Type": prometheus_client.CONTENT_TYPE_LATEST})


async def broker_metrics(request: web.Request) -> web.Response:
    service = request.app[SERVICE_KEY]
    broker = (await service.discovery.brokers(fresh=True)).get(request.match_info["broker_id"])
    if broker is None:
        return web.json_response({"reason": "no such broker is registered"}, status=404)
    return await _relay(request, broker.http_url + "/metrics", b"")


async def forward(request: web.Request) -> web.Response:
    service = request.app[SERVICE_KEY]
    base = await service.discovery.web_url()
    return await _relay(request, base + request.rel_url.raw_path_qs, await request.read())


async def _relay(request: web.Request, url: str, body: bytes) -> web.Response:
    return await http_relay.relay(request.app[SERVICE_KEY].http(), request, url, body)
