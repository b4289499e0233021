"""Reading what a topic stores without consuming it: `.../{topic}/examinemessage`,
`.../{topic}/messageid/{timestamp}`, `.../{topic}/backlogSize` (the bytes after a message
id) and `.../subscription/{s}/analyzeBacklog` (a scan of a subscription's backlog).

Examining answers like a peek (web/peek.py): the entry's payload with its
metadata in `X-Pulsar-*` headers. All of them work on one topic or partition; a
partitioned topic is refused (405), as Apache does.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web
from pulsar_common.wire import entry_info
from pulsar_common.wire import errors as wire_errors

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.topics import backlog_quota
from pulsar_broker.web import peek, rest, subscriptions, topic_access

routes = web.RouteTableDef()

TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}"

#: A backlog scan stops after this many entries or this long and answers aborted=true
#: (the defaults of Apache's subscriptionBacklogScanMaxEntries and
#: subscriptionBacklogScanMaxTimeMs, not configurable here).
BACKLOG_SCAN_MAX_ENTRIES = 10_000
BACKLOG_SCAN_MAX_TIME_S = 120.0
#: Entries read per step of a backlog scan.
BACKLOG_SCAN_READ_BATCH = 100


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


@routes.put(TOPIC + "/backlogSize")
async def backlog_size_by_message_id(request: web.Request) -> web.Response:
    """Bytes stored after the message id in the body (MessageId JSON), estimated as Apache
    does: whole ledgers after its ledger plus the unread share of its own; ledgerId -1 (or
    no body) answers the topic's whole stored size."""
    name = rest.topic_name(request)
    service = rest.service(request)
    topic_access.check_persistent(name)
    if await topic_access.partitions_of(service, name) > 0:
        raise topic_access.NotAllowedOnPartitionedError(
            "calculate backlog size is not allowed for partitioned-topic")
    position = subscriptions.position_from_json(await rest.body_json(request), ml.EARLIEST)
    topic = await topic_access.existing(service, name)
    if position.ledger_id < 0:
        return rest.ok_json(topic.ledger.total_size)
    return rest.ok_json(backlog_quota.estimated_backlog_size(topic.ledger.ledgers, position))


@routes.post(subscriptions.SUB + "/analyzeBacklog")
async def analyze_backlog(request: web.Request) -> web.Response:
    """Apache's AnalyzeSubscriptionBacklogResult: the entries and messages of the
    subscription's backlog, read from storage, from the first unacknowledged entry or
    from the message id in the body (included). Acknowledged entries are skipped; with no
    entry filters every entry counts as accepted."""
    name = rest.topic_name(request)
    service = rest.service(request)
    topic_access.check_persistent(name)
    await topic_access.refuse_partitioned(service, name, "Analyze backlog")
    body = await rest.body_json(request)
    topic = await topic_access.existing(service, name)
    cursor = subscriptions.subscription_of(topic, request.match_info["subscription"]).cursor
    if body is None:
        reader = topic.ledger.new_non_durable_cursor(cursor.mark_delete_position, name=None)
    else:
        start = subscriptions.position_from_json(body, ml.EARLIEST)
        reader = topic.ledger.new_non_durable_cursor(start, name=None, inclusive=True)
    try:
        return rest.ok_json(await _scan_backlog(reader, cursor))
    finally:
        await reader.close()


async def _scan_backlog(reader: ml.ManagedCursor, cursor: ml.ManagedCursor) -> dict[str, Any]:
    entries = messages = 0
    first: ml.Position | None = None
    last: ml.Position | None = None
    deadline = time.monotonic() + BACKLOG_SCAN_MAX_TIME_S
    aborted = False
    while True:
        batch = await reader.read_entries(BACKLOG_SCAN_READ_BATCH)
        if not batch:
            break
        for entry in batch:
            if cursor.is_acknowledged(entry.position):
                continue
            if entries >= BACKLOG_SCAN_MAX_ENTRIES or time.monotonic() > deadline:
                aborted = True
                break
            entries += 1
            messages += _message_count(entry)
            first = first or entry.position
            last = entry.position
        if aborted:
            break
    return {"entries": entries, "messages": messages,
            "filterRejectedEntries": 0, "filterAcceptedEntries": entries,
            "filterRescheduledEntries": 0, "filterRejectedMessages": 0,
            "filterAcceptedMessages": messages, "filterRescheduledMessages": 0,
            "aborted": aborted,
            "firstMessageId": None if first is None else f"{first.ledger_id}:{first.entry_id}",
            "lastMessageId": None if last is None else f"{last.ledger_id}:{last.entry_id}"}


def _message_count(entry: ml.Entry) -> int:
    try:
        return entry_info.entry_info(entry.data).num_messages
    except wire_errors.WireError:
        return 1
