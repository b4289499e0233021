"""`DELETE .../{topic}/truncate` and `POST .../{topic}/trim`: dropping a topic's stored data.

Truncate is Apache's: every cursor of the topic moves to its last message (the
subscriptions stay, their backlog is cleared) and every ledger but the current
one is deleted, whatever the retention; producers and consumers stay
connected. Trim runs now the trim of consumed ledgers that retention does
periodically. Both apply to each partition of a partitioned topic (those served
by other brokers are asked of them). A non-persistent topic stores nothing:
Apache answers truncate with 412 and trim with 405.
"""

from __future__ import annotations

from aiohttp import web
from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import remote_partitions, rest, topic_access

routes = web.RouteTableDef()

TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}"


@routes.delete(TOPIC + "/truncate")
async def truncate_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    if not name.persistent:
        raise errors.PreconditionFailedError("unsupport truncate")
    service = rest.service(request)
    parts = await topic_access.fan_out(service, name)
    for topic in parts.local:
        await topic.ledger.truncate()
    await remote_partitions.call_each(request, parts.remote, accept=())
    return rest.no_content()


@routes.post(TOPIC + "/trim")
async def trim_topic(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    if not name.persistent:
        await _refuse_non_persistent(service, name)
    parts = await topic_access.fan_out(service, name)
    for topic in parts.local:
        await topic.ledger.trim_consumed_ledgers()
    await remote_partitions.call_each(request, parts.remote, accept=())
    return rest.no_content()


async def _refuse_non_persistent(service: BrokerService, name: naming.TopicName) -> None:
    """405 for a non-persistent topic (each partition of a partitioned one would answer so),
    once it is known to exist: 404 (or a redirect to its broker) comes first."""
    if await topic_access.partitions_of(service, name) == 0:
        await topic_access.non_persistent(service, name)
    raise errors.NotAllowedError("Trim on a non-persistent topic is not allowed")
