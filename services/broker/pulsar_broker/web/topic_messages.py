"""`.../{topic}/examinemessage` and `.../{topic}/messageid/{timestamp}`: finding a message
on a topic without a subscription.

Examining answers like a peek (web/peek.py): the entry's payload with its
metadata in `X-Pulsar-*` headers. Both work on one topic or partition; a
partitioned topic is refused (405), as Apache does.
"""

from __future__ import annotations

from aiohttp import web
from pulsar_common.wire import entry_info

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.web import peek, rest, topic_access

routes = web.RouteTableDef()

TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}"


@routes.get(TOPIC + "/examinemessage")
async def examine_message(request: web.Request) -> web.Response:
    """?initialPosition=latest|earliest (anything but earliest counts as latest) and
    ?messagePosition=N (1-based, at least 1): the Nth message from that end."""
    name = rest.topic_name(request)
    service = rest.service(request)
    if not name.persistent:
        raise errors.NotAllowedError("Examine messages on a non-persistent topic is not allowed")
    if await topic_access.partitions_of(service, name) > 0:
        raise topic_access.NotAllowedOnPartitionedError(
            "Examine messages on a partitioned topic is not allowed, "
            "please try examine message on specific topic partition")
    from_earliest = request.query.get("initialPosition", "latest") == "earliest"
    message_position = max(rest.query_int(request, "messagePosition", 1), 1)
    topic = await topic_access.existing(service, name)
    entry = await peek.examine(topic.ledger, from_earliest, message_position)
    return peek.entry_response(entry)


@routes.get(TOPIC + "/messageid/{timestamp}")
async def message_id_by_timestamp(request: web.Request) -> web.Response:
    """The first message published at or after timestamp (ms): the one after the newest
    published before it, the oldest stored when none was, just past the newest when
    every one was (Apache's answer, a position the next message will take)."""
    timestamp = rest.path_int(request, "timestamp")
    name = rest.topic_name(request)
    service = rest.service(request)
    if not name.persistent:
        raise errors.NotAllowedError(
            "Get message ID by timestamp on a non-persistent topic is not allowed")
    if await topic_access.partitions_of(service, name) > 0:
        raise topic_access.NotAllowedOnPartitionedError(
            "Get message ID by timestamp on a partitioned topic is not allowed, "
            "please try do it on specific topic partition")
    topic = await topic_access.existing(service, name)
    ledger = topic.ledger
    if not ledger.ledgers:
        raise errors.NotFoundError("Message ID not found")
    before = entry_info.published_before(timestamp)
    reader = ledger.new_non_durable_cursor(ml.EARLIEST, name=None)
    try:
        found = await reader.find_newest_matching(lambda entry: before(entry.data))
    finally:
        await reader.close()
    position = ledger.first_position if found is None else peek.position_after(ledger.ledgers,
                                                                                found)
    return rest.ok_json({"ledgerId": position.ledger_id, "entryId": position.entry_id,
                         "partitionIndex": name.partition_index})
