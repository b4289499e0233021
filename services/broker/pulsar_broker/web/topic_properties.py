"""`GET PUT DELETE .../{topic}/properties`: a topic's user-defined key/value properties.

Apache keeps them in the managed ledger's properties (a non-partitioned topic
or one partition) or in the partitioned-topic metadata (a partitioned topic).
Here each topic with properties has one record of its own,
`/admin/topic-properties/<tenant>/<ns>/<domain>/<topic>`, which also names
the creation time of the record that makes the topic exist (its managed
ledger, or its partitioned-topic metadata). A topic deleted in any way
(admin call, inactive-topic deletion, namespace deletion) takes its
properties with it: a record stamped for an earlier topic of the same name
is stale, read as empty and replaced. The admin delete routes remove the
record at once (web/topics.py).
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from pulsar_common import naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors, resources
from pulsar_broker.managed_ledger import metadata as ml_metadata
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import rest, topic_access

routes = web.RouteTableDef()

TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}"
ROOT_PATH = "/admin/topic-properties"


def record_path(name: naming.TopicName) -> str:
    return f"{ROOT_PATH}/{name.persistence_name}"


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


async def _read(service: BrokerService, name: naming.TopicName,
                created_ms: int) -> tuple[dict[str, str], int]:
    """The topic's properties and the record's version (VERSION_ABSENT without a record,
    or with a stale one, which is removed)."""
    path = record_path(name)
    found = await service.resources.store.get(path)
    if found is None:
        return {}, md.VERSION_ABSENT
    record = json.loads(found.value)
    if record.get("topicCreatedMs") != created_ms:
        await delete_record(service, name)
        return {}, md.VERSION_ABSENT
    return {str(k): str(v) for k, v in record.get("properties", {}).items()}, found.stat.version


async def _write(service: BrokerService, name: naming.TopicName, created_ms: int,
                 properties: dict[str, str], version: int) -> None:
    path = record_path(name)
    try:
        if not properties:
            if version != md.VERSION_ABSENT:
                await service.resources.store.delete(path, version)
            return
        record = {"topicCreatedMs": created_ms, "properties": properties}
        await service.resources.store.put(path, json.dumps(record, sort_keys=True).encode(),
                                          version)
    except md_errors.BadVersionError as exc:
        raise errors.ConflictError("Concurrent modification") from exc


async def delete_record(service: BrokerService, name: naming.TopicName) -> None:
    """Forget the topic's properties (the topic is being deleted)."""
    try:
        await service.resources.store.delete(record_path(name))
    except md_errors.NotFoundError:
        pass


def _properties_body(body: Any) -> dict[str, str]:
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
    properties, _ = await _read(service, name, await _topic_created_ms(service, name))
    return rest.ok_json(properties)


@routes.put(TOPIC + "/properties")
async def update_properties(request: web.Request) -> web.Response:
    """Adds or replaces the given keys; an empty body changes nothing, as in Apache."""
    name = rest.topic_name(request)
    service = rest.service(request)
    changes = _properties_body(await rest.body_json(request))
    created_ms = await _topic_created_ms(service, name)
    if changes:
        properties, version = await _read(service, name, created_ms)
        await _write(service, name, created_ms, {**properties, **changes}, version)
    return rest.no_content()


@routes.delete(TOPIC + "/properties")
async def remove_property(request: web.Request) -> web.Response:
    """?key=: removes that key (a key the topic does not have is no error)."""
    name = rest.topic_name(request)
    service = rest.service(request)
    key = request.query.get("key")
    created_ms = await _topic_created_ms(service, name)
    properties, version = await _read(service, name, created_ms)
    if key is not None and key in properties:
        del properties[key]
        await _write(service, name, created_ms, properties, version)
    return rest.no_content()
