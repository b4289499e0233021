"""Passing an HTTP request on to another server and its answer back, as the proxy does for
admin calls and brokers do for the functions API.

Redirects between servers (a broker's 307 to the broker that serves a topic)
are followed here, keeping method and body, so the caller sees one answer.
"""

from __future__ import annotations

import aiohttp
import yarl
from aiohttp import web

#: Redirects followed for one request.
MAX_REDIRECTS = 8
#: Request headers passed on (hop-by-hop headers and Host are not).
FORWARDED_HEADERS = ("Authorization", "Content-Type", "Accept", "X-Pulsar-Auth-Method-Name")
#: Response headers passed back.
RETURNED_HEADERS = ("Content-Type", "Location")


async def relay(session: aiohttp.ClientSession, request: web.Request, url: str,
                body: bytes) -> web.Response:
    """Send request's method, headers and body to url; its final answer as a Response
    (503 with a reason when the server cannot be reached)."""
    headers = {k: request.headers[k] for k in FORWARDED_HEADERS if k in request.headers}
    method = request.method
    for _ in range(MAX_REDIRECTS + 1):
        try:
            async with session.request(method, url, data=body or None, headers=headers,
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
            return web.json_response({"reason": f"{url} did not answer: {exc!r}"}, status=503)
    return web.json_response({"reason": f"more than {MAX_REDIRECTS} redirects"}, status=502)
