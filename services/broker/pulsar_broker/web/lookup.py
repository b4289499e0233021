"""HTTP lookup for clients whose service URL is `http://host:8080`.

`GET /lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}` answers which
broker serves the topic: the owner of its namespace bundle, assigned now when
nobody owns it (`?authoritative=true`: this broker takes it). Like
Apache's, it does not create the topic; it answers 404 only when the topic
neither exists nor could be created by a producer or consumer (auto-creation
off, or the namespace missing).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from pulsar_broker import errors
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_broker.web import rest

routes = web.RouteTableDef()


#: Apache's header naming the advertised listener, when the query has no `listenerName`.
LISTENER_NAME_HEADER = "X-Pulsar-ListenerName"


def lookup_data(owner: BrokerUrls, listener_name: str | None = None) -> dict[str, Any]:
    """Apache's LookupData; the C++ client insists brokerUrlTls is a string (it connects
    there when its service URL is TLS). With a listener name, brokerUrl is that
    listener's (ListenerNotFoundError if it has none)."""
    return {
        "brokerUrl": owner.native_url_for(listener_name),
        "brokerUrlTls": owner.native_url_tls_for(listener_name) or "",
        "httpUrl": owner.http_url,
        "httpUrlTls": owner.http_url_tls or "",
        "nativeUrl": owner.native_url,
    }


@routes.get("/lookup/v2/topic/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}")
async def lookup_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    await service.check_namespace(name.namespace_name)
    exists = (await service.topic_exists(name) if name.persistent
              else service.non_persistent.get(name) is not None)
    if not exists and not await service.may_create_topic(name):
        raise errors.TopicNotFoundError("Topic not found")
    owner = await service.namespaces.lookup(name, rest.query_flag(request, "authoritative"))
    listener = (request.query.get("listenerName")
                or request.headers.get(LISTENER_NAME_HEADER))
    return rest.ok_json(lookup_data(owner, listener))


@routes.get("/lookup/v2/topic/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}/bundle")
async def topic_bundle(request: web.Request) -> web.Response:
    """The range of the bundle the topic falls into (`pulsar-admin topics bundle-range`)."""
    name = rest.topic_name(request)
    bundle = await rest.service(request).namespaces.bundle_of(name)
    return web.Response(text=bundle.range)

