"""Admin REST for topic schemas, paths and JSON shapes as Apache's `/admin/v2/schemas`.

GET `.../schema` (latest), `.../schema/{version}`, `.../schemas` (every live
version); POST `.../schema` (upload, PostSchemaPayload), `.../compatibility`
(test only), `.../version` (the version of an equal schema); DELETE
`.../schema` (a deleted mark; `?force=true` removes the history). Schemas
live in the metadata store, so any broker answers without redirecting.
"""

from __future__ import annotations

from aiohttp import web
from pulsar_common import naming

from pulsar_broker.schema import errors, records, registry, topic_schemas
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import rest

routes = web.RouteTableDef()

BASE = "/admin/v2/schemas/{tenant}/{namespace}/{topic}"


async def _topic(request: web.Request) -> naming.TopicName:
    name = rest.topic_name(request)
    await rest.service(request).check_namespace(name.namespace_name)
    return name


async def _payload(request: web.Request) -> records.SchemaData:
    try:
        return records.from_payload(await rest.body_json(request, {}))
    except records.InvalidSchemaError as exc:
        raise errors.InvalidSchemaDefinitionError(str(exc)) from exc


async def _proposed(request: web.Request) -> tuple[naming.TopicName, records.SchemaData,
                                                   BrokerService, topic_schemas.SchemaPolicy]:
    """A schema sent for a topic: the topic, the schema, and the namespace's schema policy."""
    name = await _topic(request)
    schema = await _payload(request)
    service = rest.service(request)
    return name, schema, service, await topic_schemas.policy_of(service, name.namespace_name)


def _found(stored: records.StoredSchema | None) -> records.StoredSchema:
    if stored is None:
        raise errors.SchemaNotFoundError("Schema not found")
    if stored.deleted:
        raise errors.SchemaNotFoundError("Schema is deleted")
    return stored


@routes.get(BASE + "/schema")
async def get_schema(request: web.Request) -> web.Response:
    name = await _topic(request)
    stored = await rest.service(request).schemas.get(name)
    return rest.ok_json(records.response(_found(stored)))


@routes.get(BASE + "/schema/{version}")
async def get_schema_version(request: web.Request) -> web.Response:
    name = await _topic(request)
    version = rest.path_int(request, "version")
    stored = await rest.service(request).schemas.get(name, version)
    return rest.ok_json(records.response(_found(stored)))


@routes.get(BASE + "/schemas")
async def get_all_schemas(request: web.Request) -> web.Response:
    name = await _topic(request)
    history = await rest.service(request).schemas.history(name)
    return rest.ok_json({"getSchemaResponses": [records.response(s)
                                                for s in registry.live(history)]})


@routes.post(BASE + "/schema")
async def post_schema(request: web.Request) -> web.Response:
    name, schema, service, policy = await _proposed(request)
    version = await service.schemas.put_if_absent(name, schema, policy.strategy)
    return rest.ok_json({"version": {"version": version}})


@routes.post(BASE + "/compatibility")
async def test_compatibility(request: web.Request) -> web.Response:
    name, schema, service, policy = await _proposed(request)
    try:
        await service.schemas.check_compatible(name, schema, policy.strategy)
        compatible = True
    except errors.IncompatibleSchemaError:
        compatible = False
    return rest.ok_json({"isCompatibility": compatible,
                         "schemaCompatibilityStrategy": policy.strategy})


@routes.post(BASE + "/version")
async def version_of_schema(request: web.Request) -> web.Response:
    name = await _topic(request)
    schema = await _payload(request)
    version = await rest.service(request).schemas.existing_version(name, schema)
    if version is None:
        raise errors.SchemaNotFoundError("Not found schema")
    return rest.ok_json({"version": version})


@routes.delete(BASE + "/schema")
async def delete_schema(request: web.Request) -> web.Response:
    name = await _topic(request)
    schemas = rest.service(request).schemas
    version = await schemas.delete(name, force=rest.query_flag(request, "force"))
    if version is None:
        raise errors.SchemaNotFoundError("Schema not found")
    return rest.ok_json({"version": version})
