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
import typing

import aiohttp
import prometheus_client
import yarl
from aiohttp import web
from prometheus_client import registry

if typing.TYPE_CHECKING:
    from pulsar_proxy.service import ProxyService

#: Redirects between brokers followed for one admin request.
MAX_REDIRECTS = 8
#: Request headers passed on to brokers (hop-by-hop and Host are not).
FORWARDED_HEADERS = ("Authorization", "Content-Type", "Accept", "X-Pulsar-Auth-Method-Name")
#: Response headers passed back to the client.
RETURNED_HEADERS = ("Content-Type", "Location")

SERVICE_KEY: web.AppKey[ProxyService] = web.AppKey("service")
REGISTRY_KEY = web.AppKey("registry", registry.CollectorRegistry)


def create_app(service: ProxyService, metrics: registry.CollectorRegistry) -> web.Application:
    app = web.Application(client_max_size=service.conf.max_http_request_body_bytes)
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
    service = request.app[SERVICE_KEY]
    headers = {k: request.headers[k] for k in FORWARDED_HEADERS if k in request.headers}
    method = request.method
    for _ in range(MAX_REDIRECTS + 1):
        try:
            async with service.http().request(method, url, data=body or None, headers=headers,
                                              allow_redirects=False) as reply:
                location = reply.headers.get("Location")
                if reply.status in (301, 302, 303, 307, 308) and location:
                    url = str(reply.url.join(yarl.URL(location)))
                    if reply.status == 303:
                        method, body = "GET", b""
                    continue
                returned = {k: reply.headers[k] for k in RETURNED_HEADERS if k in reply.headers}
                return web.Response(status=reply.status, body=await reply.read(),
                                    headers=returned)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return web.json_response({"reason": f"broker at {url} did not answer: {exc!r}"},
                                     status=503)
    return web.json_response({"reason": f"more than {MAX_REDIRECTS} redirects"}, status=502)
