"""`/admin/v3/functions/...` on a broker: passed on to a functions worker, as Apache's brokers
do when the worker does not run inside them.

The workers register themselves in the metadata store (`/functions/workers`);
a request goes to one of the live ones and its answer comes back unchanged.
With no worker registered the answer is 503 with a reason. Function code is
uploaded through here, so this part of the API takes larger bodies than the
rest of the admin API.

On a secured cluster the worker decides on the client's own role, as Apache's
does: the client's Authorization header is passed on unchanged. A client that
authenticated here by its TLS certificate has no header to pass on; its
request goes with this broker's own credentials (brokerClientAuthentication*)
and its role in X-Original-Principal, which the worker honours when the
broker's role is one of its proxyRoles.
"""

from __future__ import annotations

import json
import random

import aiohttp
from aiohttp import web
from pulsar_common import http_relay

from pulsar_broker.security import guard
from pulsar_broker.web import auth, rest

PREFIX = "/admin/v3/functions"
WORKERS_PATH = "/functions/workers"
#: Largest request body passed on (code packages; the worker sets its own limit).
MAX_BODY_BYTES = 64 * 1024 * 1024
#: How long a worker may take to answer (a create waits for the code to be stored).
WORKER_TIMEOUT_S = 60.0


class _Http:
    """The client session of the forwarding, opened on first use, closed with the app."""

    def __init__(self) -> None:
        self.session: aiohttp.ClientSession | None = None

    def get(self) -> aiohttp.ClientSession:
        if self.session is None:
            self.session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=WORKER_TIMEOUT_S))
        return self.session

    async def close(self, _: web.Application) -> None:
        if self.session is not None:
            await self.session.close()


HTTP = web.AppKey("functions_http", _Http)


async def _worker_url(request: web.Request) -> str | None:
    store = request.config_dict[rest.SERVICE].resources.store
    found = []
    for worker_id in await store.get_children(WORKERS_PATH):
        record = await store.get(f"{WORKERS_PATH}/{worker_id}")
        if record is not None:
            value = json.loads(record.value)
            found.append(f"http://{value['workerHostname']}:{value['port']}")
    return random.choice(found) if found else None


async def forward(request: web.Request) -> web.Response:
    worker = await _worker_url(request)
    if worker is None:
        return rest.error_json(503, "No functions worker is running: start `pulsar "
                               "functions-worker` (pulsar standalone runs one unless "
                               "--no-functions-worker)")
    body = await request.read()
    url = worker + request.path_qs
    role = request.get(auth.ROLE)
    if role is None or "Authorization" in request.headers:
        return await http_relay.relay(request.app[HTTP].get(), request, url, body)
    headers = {**guard.broker_client_headers(request.config_dict[rest.SERVICE].config),
               auth.ORIGINAL_PRINCIPAL_HEADER: role}
    async with aiohttp.ClientSession(
            headers=headers, timeout=aiohttp.ClientTimeout(total=WORKER_TIMEOUT_S)) as session:
        return await http_relay.relay(session, request, url, body)


def install(app: web.Application) -> None:
    """Mount the forwarding sub-application (its own body limit) under PREFIX."""
    functions_app = web.Application(client_max_size=MAX_BODY_BYTES)
    functions_app.router.add_route("*", "/{tail:.*}", forward)
    functions_app[HTTP] = _Http()
    functions_app.on_cleanup.append(functions_app[HTTP].close)
    app.add_subapp(PREFIX, functions_app)
