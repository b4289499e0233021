"""The schema commands of the binary protocol: GET_SCHEMA, GET_OR_CREATE_SCHEMA, and the
schema a PRODUCER or SUBSCRIBE announces.

Each reply is built here and written by the connection's handlers; failures
are answered in the command's own response, never dropped. The registry they
ask is `pulsar_broker.schema`, a layer below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pulsar_common import naming
from pulsar_common.wire import commands as replies
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker.schema import errors, records, topic_schemas
from pulsar_broker.server import commands

if TYPE_CHECKING:
    from pulsar_broker.service.broker_service import BrokerService


def announced_schema(request: pb.CommandProducer | pb.CommandSubscribe) -> records.SchemaData | None:
    """The schema a producer or consumer announced; None for none, BYTES (the clients send
    no schema for it) and AUTO_CONSUME (which adopts the topic's)."""
    if not request.HasField("schema") or request.schema.type == pb.Schema.AutoConsume:
        return None
    try:
        return records.from_protocol(request.schema)
    except records.InvalidSchemaError as exc:
        raise errors.IncompatibleSchemaError(str(exc)) from exc


async def get_schema(service: BrokerService, request: pb.CommandGetSchema) -> pb.BaseCommand:
    """The asked version (latest when none), or TopicNotFound as Apache answers "no schema"."""
    try:
        topic = naming.TopicName.parse(request.topic)
        version = (records.decode_version(request.schema_version)
                   if request.HasField("schema_version") else None)
        stored = await service.schemas.get(topic, version)
    except Exception as exc:  # noqa: BLE001 - answered in GET_SCHEMA_RESPONSE, never dropped
        return replies.get_schema_error(request.request_id, commands.server_error_of(exc),
                                        str(exc))
    if stored is None or stored.deleted:
        return replies.get_schema_error(request.request_id, pb.TopicNotFound,
                                        "Topic not found or no-schema")
    return replies.get_schema_response(
        request.request_id, records.to_protocol(stored.schema, str(topic)),
        records.encode_version(stored.version))


async def get_or_create_schema(service: BrokerService,
                               request: pb.CommandGetOrCreateSchema) -> pb.BaseCommand:
    """Registered as a producer's schema would be (sent by clients that switch schemas)."""
    try:
        topic = naming.TopicName.parse(request.topic)
        schema = records.from_protocol(request.schema)
        version = await topic_schemas.for_producer(service, topic, schema)
        return replies.get_or_create_schema_response(
            request.request_id,
            schema_version=b"" if version is None else records.encode_version(version))
    except (errors.IncompatibleSchemaError, records.InvalidSchemaError) as exc:
        return replies.get_or_create_schema_response(
            request.request_id, code=pb.IncompatibleSchema, message=str(exc))
    except Exception as exc:  # noqa: BLE001 - answered, never dropped
        return replies.get_or_create_schema_response(
            request.request_id, code=commands.server_error_of(exc), message=str(exc))
