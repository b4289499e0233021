"""`.../{topic}/subscriptions` and `.../{topic}/subscription/{subscription}/...`.

Create and delete subscriptions, skip and clear backlogs, expire old messages (of one
subscription or all of them) and reset cursors by time or message id. On a partitioned
topic, creating, deleting, clearing, expiring and resetting by time apply to every
partition, as Apache does (partitions served by other brokers are asked there); skipping
a count and peeking are per partition only.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web
from pulsar_common.wire import entry_info

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.managed_ledger import errors as ml_errors
from pulsar_broker.subscriptions.subscription import Subscription
from pulsar_broker.topics import message_expiry
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_broker.web import peek, remote_partitions, rest, topic_access, topic_properties

routes = web.RouteTableDef()

TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}"
SUB = TOPIC + "/subscription/{subscription}"

_INT64_MAX = 2**63 - 1


def position_from_json(body: Any, default: ml.Position) -> ml.Position:
    """A MessageId JSON ({"ledgerId", "entryId", ...}) as a position; earliest/latest sentinels."""
    if body is None:
        return default
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("Message id must be a JSON object")
    try:
        ledger_id = int(body["ledgerId"])
        entry_id = int(body["entryId"])
    except (KeyError, TypeError, ValueError) as exc:
        raise errors.InvalidRequestError("Message id needs integer ledgerId and entryId") from exc
    if ledger_id < 0:
        return ml.EARLIEST
    if ledger_id >= _INT64_MAX:
        return ml.LATEST
    return ml.Position(ledger_id, entry_id)


def subscription_of(topic: PersistentTopic, name: str) -> Subscription:
    subscription = topic.subscriptions.get(name)
    if subscription is None:
        raise errors.NotFoundError("Subscription not found")
    return subscription


async def _subscriptions(request: web.Request) -> list[Subscription]:
    """The named subscription on the topic, or on each partition that has it. Partitions
    served by other brokers get the same request there."""
    name = rest.topic_name(request)
    service = rest.service(request)
    sub_name = request.match_info["subscription"]
    parts = await topic_access.fan_out(service, name)
    found = [t.subscriptions[sub_name] for t in parts.local if sub_name in t.subscriptions]
    answers = await remote_partitions.call_each(request, parts.remote)
    if not found and not any(status < 300 for _, status, _ in answers):
        raise errors.NotFoundError("Subscription not found")
    return found


async def _single_subscription(request: web.Request, what: str) -> Subscription:
    name = rest.topic_name(request)
    service = rest.service(request)
    await topic_access.refuse_partitioned(service, name, what)
    topic = await topic_access.existing(service, name)
    return subscription_of(topic, request.match_info["subscription"])


@routes.get(TOPIC + "/subscriptions")
async def list_subscriptions(request: web.Request) -> web.Response:
    parts = await topic_access.fan_out(rest.service(request), rest.topic_name(request))
    names = {name for topic in parts.local for name in topic.subscriptions}
    for _, _, remote_names in await remote_partitions.call_each(request, parts.remote):
        names.update(remote_names or [])
    return rest.ok_json(sorted(names))


@routes.put(SUB)
async def create_subscription(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    sub_name = request.match_info["subscription"]
    body = await rest.body_json(request)
    position = position_from_json(body, ml.LATEST)
    properties = topic_properties.properties_body(
        body.get("properties") if isinstance(body, dict) else None)
    topic_access.check_persistent(name)
    if await topic_access.partitions_of(service, name) > 0:
        parts = await topic_access.fan_out(service, name, create_partitions=True)
    else:
        topic = await service.get_topic(name, create=True)
        if topic is None:
            raise errors.TopicNotFoundError("Topic not found")
        parts = topic_access.Partitions([topic], [])
    if any(sub_name in t.subscriptions for t in parts.local):
        raise errors.ConflictError("Subscription already exists for topic")
    for topic in parts.local:
        await topic.create_subscription(sub_name, position)
        if properties:
            await topic_properties.set_subscription_properties(service, topic, sub_name,
                                                               properties)
    await remote_partitions.call_each(request, parts.remote, accept=())
    return rest.no_content()


@routes.delete(SUB)
async def delete_subscription(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    sub_name = request.match_info["subscription"]
    force = rest.query_flag(request, "force")
    parts = await topic_access.fan_out(rest.service(request), name)
    owners = [t for t in parts.local if sub_name in t.subscriptions]
    answers = await remote_partitions.call_each(request, parts.remote)
    if not owners and not any(status < 300 for _, status, _ in answers):
        raise errors.NotFoundError("Subscription not found")
    for topic in owners:
        await topic.unsubscribe(sub_name, force)
        await topic_properties.delete_subscription_record(rest.service(request), topic.name,
                                                          sub_name)
    return rest.no_content()


@routes.post(SUB + "/skip/{count}")
async def skip_messages(request: web.Request) -> web.Response:
    count = rest.path_int(request, "count")
    if count <= 0:
        raise errors.PreconditionFailedError("Number of messages to skip must be positive")
    subscription = await _single_subscription(request, "Skip messages")
    await subscription.cursor.skip_entries(count)
    subscription.new_entries()
    return rest.no_content()


@routes.post(SUB + "/skip_all")
async def clear_backlog(request: web.Request) -> web.Response:
    for subscription in await _subscriptions(request):
        await subscription.cursor.clear_backlog()
    return rest.no_content()


@routes.post(SUB + "/expireMessages/{seconds}")
async def expire_messages(request: web.Request) -> web.Response:
    """Acknowledge every message published more than `seconds` ago."""
    seconds = rest.path_int(request, "seconds")
    cutoff_ms = int(time.time() * 1000) - seconds * 1000
    for subscription in await _subscriptions(request):
        if await message_expiry.expire_before(subscription.cursor, cutoff_ms):
            subscription.new_entries()
    return rest.no_content()


@routes.post(SUB + "/expireMessages")
async def expire_messages_to_position(request: web.Request) -> web.Response:
    """Acknowledge every message up to and including the message id in the body
    (ResetCursorData, whose `isExcluded` only matters for a message inside a batch, which
    this position does not address). A position past the newest message expires nothing,
    as Apache's."""
    body = await rest.body_json(request)
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("The message id to expire up to must be given")
    target = position_from_json(body, ml.EARLIEST)
    name = rest.topic_name(request)
    service = rest.service(request)
    topic_access.check_persistent(name)
    if await topic_access.partitions_of(service, name) > 0:
        raise topic_access.NotAllowedOnPartitionedError(
            "Expire message at position is not supported for partitioned-topic")
    topic = await topic_access.existing(service, name)
    subscription = subscription_of(topic, request.match_info["subscription"])
    if target > topic.ledger.last_confirmed_entry:
        return rest.no_content()
    cursor = subscription.cursor
    found = await cursor.find_newest_matching(lambda entry: entry.position <= target,
                                              active_only=True)
    if found is not None and found > cursor.mark_delete_position:
        await cursor.mark_delete(found)
        subscription.new_entries()
    return rest.no_content()


@routes.post(TOPIC + "/all_subscription/expireMessages/{seconds}")
async def expire_messages_of_all_subscriptions(request: web.Request) -> web.Response:
    """The same on every subscription of the topic (of each partition, on a partitioned
    topic)."""
    seconds = rest.path_int(request, "seconds")
    cutoff_ms = int(time.time() * 1000) - seconds * 1000
    name = rest.topic_name(request)
    topic_access.check_persistent(name)
    parts = await topic_access.fan_out(rest.service(request), name)
    for topic in parts.local:
        for subscription in list(topic.subscriptions.values()):
            if await message_expiry.expire_before(subscription.cursor, cutoff_ms):
                subscription.new_entries()
    await remote_partitions.call_each(request, parts.remote, accept=())
    return rest.no_content()


@routes.post(SUB + "/resetcursor/{timestamp}")
async def reset_cursor_to_time(request: web.Request) -> web.Response:
    """Redeliver from the first message published at or after timestamp (ms)."""
    timestamp = rest.path_int(request, "timestamp")
    before = entry_info.published_before(timestamp)
    for subscription in await _subscriptions(request):
        found = await subscription.cursor.find_newest_matching(lambda e: before(e.data))
        target = ml.EARLIEST if found is None else ml.Position(found.ledger_id, found.entry_id + 1)
        await subscription.reset_cursor(target)
    return rest.no_content()


@routes.post(SUB + "/resetcursor")
async def reset_cursor_to_id(request: web.Request) -> web.Response:
    body = await rest.body_json(request)
    position = position_from_json(body, ml.EARLIEST)
    if rest.query_flag(request, "isExcluded") and position not in (ml.EARLIEST, ml.LATEST):
        position = ml.Position(position.ledger_id, position.entry_id + 1)
    name = rest.topic_name(request)
    service = rest.service(request)
    partition = int(body.get("partitionIndex", -1)) if isinstance(body, dict) else -1
    if partition >= 0 and await topic_access.partitions_of(service, name) > 0:
        name = name.partition(partition)
    await topic_access.refuse_partitioned(service, name, "Reset cursor by message id")
    topic = await topic_access.existing(service, name)
    await subscription_of(topic, request.match_info["subscription"]).reset_cursor(position)
    return rest.no_content()


@routes.get(SUB + "/position/{position}")
async def peek_nth_message(request: web.Request) -> web.Response:
    nth = rest.path_int(request, "position")
    if nth <= 0:
        raise errors.PreconditionFailedError("Message position must be 1 or more")
    name = rest.topic_name(request)
    service = rest.service(request)
    await topic_access.refuse_partitioned(service, name, "Peek messages")
    topic = await topic_access.existing(service, name)
    subscription = subscription_of(topic, request.match_info["subscription"])
    entry = await peek.nth_unacknowledged(topic.ledger, subscription.cursor, nth)
    return peek.entry_response(entry)


@routes.get(TOPIC + "/ledger/{ledger}/entry/{entry}")
async def get_message_by_id(request: web.Request) -> web.Response:
    """One entry by its position, in the same form as a peek."""
    position = ml.Position(rest.path_int(request, "ledger"), rest.path_int(request, "entry"))
    topic = await topic_access.existing(rest.service(request), rest.topic_name(request))
    last = topic.ledger.last_confirmed_entry
    if position.entry_id < 0 or position > last:
        raise errors.NotFoundError("Message not found")
    try:
        entry = await topic.ledger.read_entry(position)
    except ml_errors.ManagedLedgerError as exc:
        raise errors.NotFoundError("Message not found") from exc
    return peek.entry_response(entry)
