"""Topic properties (`GET PUT DELETE .../{topic}/properties`) and subscription properties
(`GET PUT .../{topic}/subscription/{subscription}/properties`): user-defined key/value pairs.

Apache keeps a topic's in its managed ledger's properties (a non-partitioned
topic or one partition) or in the partitioned-topic metadata, and a
subscription's in its cursor. Here each has one record of its own,
`/admin/topic-properties/<tenant>/<ns>/<domain>/<topic>` and
`/admin/subscription-properties/<tenant>/<ns>/<domain>/<topic>/<subscription>`,
which also names the creation time of the store record that makes the topic
or subscription exist (managed ledger, partitioned-topic metadata, cursor).
Whatever deletes the topic or subscription (admin call, inactive-topic
deletion, namespace deletion, a consumer unsubscribing) takes the properties
with it: a record stamped for an earlier one of the same name is stale, read
as empty and replaced (unless both were created within the same millisecond). The admin delete routes remove records at once
(web/topics.py, web/subscriptions.py).
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from aiohttp import web
from pulsar_common import naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors, resources
from pulsar_broker.managed_ledger import metadata as ml_metadata
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_broker.web import remote_partitions, rest, topic_access

routes = web.RouteTableDef()

TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}"
SUB = TOPIC + "/subscription/{subscription}"
ROOT_PATH = "/admin/topic-properties"
SUBSCRIPTIONS_ROOT_PATH = "/admin/subscription-properties"


def record_path(name: naming.TopicName) -> str:
    return f"{ROOT_PATH}/{name.persistence_name}"


def subscription_record_path(name: naming.TopicName, subscription: str) -> str:
    return (f"{SUBSCRIPTIONS_ROOT_PATH}/{name.persistence_name}/"
            f"{urllib.parse.quote(subscription, safe='')}")


async def _topic_created_ms(service: BrokerService, name: naming.TopicName) -> int:
    """When the record defining the topic was created; 404 when the topic does not exist
    (a single topic served by another broker is redirected there)."""
    topic_access.check_persistent(name)
    if await topic_access.partitions_of(service, name) > 0:
        path = f"{resources.PARTITIONED}/{name.persistence_name}"
    else:
        await topic_access.existing(service, name)
        path = ml_metadata.ledger_path(name.persistence_name)
    found = await service.resources.store.get(path)
    if found is None:
        raise errors.TopicNotFoundError("Topic not found")
    return found.stat.creation_ms


async def _read(service: BrokerService, path: str,
                created_ms: int) -> tuple[dict[str, str], int]:
    """The properties of the record at path and its version (VERSION_ABSENT without a
    record, or with a stale one, which is removed)."""
    found = await service.resources.store.get(path)
    if found is None:
        return {}, md.VERSION_ABSENT
    record = json.loads(found.value)
    if record.get("createdMs") != created_ms:
        await _delete(service, path)
        return {}, md.VERSION_ABSENT
    return {str(k): str(v) for k, v in record.get("properties", {}).items()}, found.stat.version


async def _write(service: BrokerService, path: str, created_ms: int,
                 properties: dict[str, str], version: int) -> None:
    try:
        if not properties:
            if version != md.VERSION_ABSENT:
                await service.resources.store.delete(path, version)
            return
        record = {"createdMs": created_ms, "properties": properties}
        await service.resources.store.put(path, json.dumps(record, sort_keys=True).encode(),
                                          version)
    except md_errors.BadVersionError as exc:
        raise errors.ConflictError("Concurrent modification") from exc


async def _delete(service: BrokerService, path: str) -> None:
    try:
        await service.resources.store.delete(path)
    except md_errors.NotFoundError:
        pass


async def delete_record(service: BrokerService, name: naming.TopicName) -> None:
    """Forget the topic's properties and its subscriptions' (the topic is being deleted)."""
    await _delete(service, record_path(name))
    await service.resources.store.delete_recursive(
        f"{SUBSCRIPTIONS_ROOT_PATH}/{name.persistence_name}")


async def delete_subscription_record(service: BrokerService, name: naming.TopicName,
                                     subscription: str) -> None:
    """Forget the subscription's properties (it is being deleted)."""
    await _delete(service, subscription_record_path(name, subscription))


def properties_body(body: Any) -> dict[str, str]:
    """A JSON object of scalar values, read as Apache's Map<String, String> is."""
    if body is None:
        return {}
    if not isinstance(body, dict) or any(isinstance(v, (dict, list)) for v in body.values()):
        raise errors.InvalidRequestError("Properties must be a JSON object of strings")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in body.items()
            if v is not None}


@routes.get(TOPIC + "/properties")
async def get_properties(request: web.Request) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    properties, _ = await _read(service, record_path(name), await _topic_created_ms(service, name))
    return rest.ok_json(properties)


@routes.put(TOPIC + "/properties")
async def update_properties(request: web.Request) -> web.Response:
    """Adds or replaces the given keys; an empty body changes nothing, as in Apache."""
    name = rest.topic_name(request)
    service = rest.service(request)
    await add_topic_properties(service, name, properties_body(await rest.body_json(request)))
    return rest.no_content()


async def add_topic_properties(service: BrokerService, name: naming.TopicName,
                               changes: dict[str, str]) -> None:
    """Add or replace these keys of the topic's properties (404 without the topic)."""
    created_ms = await _topic_created_ms(service, name)
    if not changes:
        return
    path = record_path(name)
    properties, version = await _read(service, path, created_ms)
    await _write(service, path, created_ms, {**properties, **changes}, version)


@routes.delete(TOPIC + "/properties")
async def remove_property(request: web.Request) -> web.Response:
    """?key=: removes that key (a key the topic does not have is no error)."""
    name = rest.topic_name(request)
    service = rest.service(request)
    key = request.query.get("key")
    created_ms = await _topic_created_ms(service, name)
    path = record_path(name)
    properties, version = await _read(service, path, created_ms)
    if key is not None and key in properties:
        del properties[key]
        await _write(service, path, created_ms, properties, version)
    return rest.no_content()


async def _cursor_created_ms(service: BrokerService, topic: PersistentTopic,
                             subscription: str) -> int:
    """When the subscription's cursor record was created; 404 without the subscription,
    405 for a non-durable one (a reader's), whose cursor is not stored."""
    found_subscription = topic.subscriptions.get(subscription)
    if found_subscription is None:
        raise errors.NotFoundError("Subscription not found")
    if not found_subscription.durable:
        raise errors.NotAllowedError(
            "Properties of a non-durable subscription are not kept")
    path = ml_metadata.cursor_path(topic.name.persistence_name, subscription)
    found = await service.resources.store.get(path)
    if found is None:
        raise errors.NotFoundError("Subscription not found")
    return found.stat.creation_ms


async def _partitions_with(request: web.Request, method: str,
                           ) -> tuple[topic_access.Partitions, list[Any]]:
    """The topic (or its partitions) and the answers of the brokers serving the others
    to the same request; 404 when no partition has the subscription."""
    name = rest.topic_name(request)
    sub_name = request.match_info["subscription"]
    parts = await topic_access.fan_out(rest.service(request), name)
    answers = await remote_partitions.call_each(request, parts.remote, method)
    holding = [t for t in parts.local if sub_name in t.subscriptions]
    if not holding and not any(status < 300 for _, status, _ in answers):
        raise errors.NotFoundError("Subscription not found")
    parts.local = holding
    return parts, [body for _, status, body in answers if status < 300]


@routes.get(SUB + "/properties")
async def get_subscription_properties(request: web.Request) -> web.Response:
    """The subscription's properties; on a partitioned topic, those of every partition
    merged, as Apache answers."""
    service = rest.service(request)
    sub_name = request.match_info["subscription"]
    parts, remote = await _partitions_with(request, "GET")
    merged: dict[str, str] = {}
    for topic in parts.local:
        created_ms = await _cursor_created_ms(service, topic, sub_name)
        properties, _ = await _read(service, subscription_record_path(topic.name, sub_name),
                                    created_ms)
        merged.update(properties)
    for answer in remote:
        merged.update(answer or {})
    return rest.ok_json(merged)


@routes.put(SUB + "/properties")
async def update_subscription_properties(request: web.Request) -> web.Response:
    """Replace the subscription's properties (an empty body clears them), on every
    partition that has it."""
    service = rest.service(request)
    sub_name = request.match_info["subscription"]
    properties = properties_body(await rest.body_json(request))
    parts, _ = await _partitions_with(request, "PUT")
    for topic in parts.local:
        await set_subscription_properties(service, topic, sub_name, properties)
    return rest.no_content()


async def set_subscription_properties(service: BrokerService, topic: PersistentTopic,
                                      subscription: str, properties: dict[str, str]) -> None:
    """Replace what the subscription (on this topic or partition) has."""
    created_ms = await _cursor_created_ms(service, topic, subscription)
    path = subscription_record_path(topic.name, subscription)
    _, version = await _read(service, path, created_ms)
    await _write(service, path, created_ms, properties, version)
