"""Constructors for the commands a broker sends, as BaseCommand messages.

Thin on purpose: each function fills one command body and wraps it; optional
fields are set only when given, so the bytes match what clients expect from
the Java broker. Encode with ``frame.encode_command`` (or use the prebuilt
``PING_FRAME`` / ``PONG_FRAME``). MESSAGE frames come from
``entry.message_frame_parts``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from pulsar_common.wire import entry, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def _code(value: int) -> pb.ServerError:
    """Accept a codes.ServerError, a generated constant or a plain int."""
    return cast(pb.ServerError, int(value))


def connected(
    server_version: str,
    protocol_version: int,
    *,
    max_message_size: int | None = None,
    supports_broker_entry_metadata: bool = False,
    supports_topic_watchers: bool = False,
    supports_partial_producer: bool = False,
    supports_auth_refresh: bool = False,
    supports_get_partitioned_metadata_without_auto_creation: bool = False,
) -> pb.BaseCommand:
    body = pb.CommandConnected(server_version=server_version, protocol_version=protocol_version)
    if max_message_size is not None:
        body.max_message_size = max_message_size
    flags = body.feature_flags
    flags.supports_auth_refresh = supports_auth_refresh
    flags.supports_broker_entry_metadata = supports_broker_entry_metadata
    flags.supports_partial_producer = supports_partial_producer
    flags.supports_topic_watchers = supports_topic_watchers
    flags.supports_get_partitioned_metadata_without_auto_creation = (
        supports_get_partitioned_metadata_without_auto_creation
    )
    return T(type=T.CONNECTED, connected=body)


def ping() -> pb.BaseCommand:
    return T(type=T.PING, ping=pb.CommandPing())


def pong() -> pb.BaseCommand:
    return T(type=T.PONG, pong=pb.CommandPong())


PING_FRAME = frame.encode_command(ping())
PONG_FRAME = frame.encode_command(pong())


def success(request_id: int, *, schema: pb.Schema | None = None) -> pb.BaseCommand:
    body = pb.CommandSuccess(request_id=request_id)
    if schema is not None:
        body.schema.CopyFrom(schema)
    return T(type=T.SUCCESS, success=body)


def error(request_id: int, code: int, message: str) -> pb.BaseCommand:
    """ERROR: ``code`` is a ServerError value."""
    return T(
        type=T.ERROR,
        error=pb.CommandError(request_id=request_id, error=_code(code), message=message),
    )


def producer_success(
    request_id: int,
    producer_name: str,
    *,
    last_sequence_id: int = -1,
    schema_version: bytes | None = None,
    topic_epoch: int | None = None,
    producer_ready: bool = True,
) -> pb.BaseCommand:
    body = pb.CommandProducerSuccess(
        request_id=request_id, producer_name=producer_name, last_sequence_id=last_sequence_id
    )
    if schema_version is not None:
        body.schema_version = schema_version
    if topic_epoch is not None:
        body.topic_epoch = topic_epoch
    if not producer_ready:
        body.producer_ready = False
    return T(type=T.PRODUCER_SUCCESS, producer_success=body)


def send_receipt(
    producer_id: int,
    sequence_id: int,
    ledger_id: int,
    entry_id: int,
    *,
    partition: int = -1,
    highest_sequence_id: int | None = None,
) -> pb.BaseCommand:
    """SEND_RECEIPT; ledger_id = entry_id = -1 acknowledges a dropped duplicate."""
    command = T(type=T.SEND_RECEIPT)
    body = command.send_receipt
    body.producer_id = producer_id
    body.sequence_id = sequence_id
    entry.fill_message_id(body.message_id, ledger_id, entry_id, partition=partition)
    if highest_sequence_id is not None:
        body.highest_sequence_id = highest_sequence_id
    return command


def send_error(producer_id: int, sequence_id: int, code: int, message: str) -> pb.BaseCommand:
    """SEND_ERROR; clients survive only ChecksumError, any other code drops the connection."""
    body = pb.CommandSendError(
        producer_id=producer_id, sequence_id=sequence_id, error=_code(code), message=message
    )
    return T(type=T.SEND_ERROR, send_error=body)


def close_producer(producer_id: int, request_id: int) -> pb.BaseCommand:
    body = pb.CommandCloseProducer(producer_id=producer_id, request_id=request_id)
    return T(type=T.CLOSE_PRODUCER, close_producer=body)


def close_consumer(consumer_id: int, request_id: int) -> pb.BaseCommand:
    body = pb.CommandCloseConsumer(consumer_id=consumer_id, request_id=request_id)
    return T(type=T.CLOSE_CONSUMER, close_consumer=body)


def active_consumer_change(consumer_id: int, is_active: bool) -> pb.BaseCommand:
    body = pb.CommandActiveConsumerChange(consumer_id=consumer_id, is_active=is_active)
    return T(type=T.ACTIVE_CONSUMER_CHANGE, active_consumer_change=body)


def reached_end_of_topic(consumer_id: int) -> pb.BaseCommand:
    body = pb.CommandReachedEndOfTopic(consumer_id=consumer_id)
    return T(type=T.REACHED_END_OF_TOPIC, reachedEndOfTopic=body)


def message(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    *,
    partition: int = -1,
    redelivery_count: int = 0,
    ack_set: Iterable[int] | None = None,
) -> pb.BaseCommand:
    """The MESSAGE command alone (its entry travels after it: see entry.message_frame_parts)."""
    return entry.message_command(
        consumer_id,
        ledger_id,
        entry_id,
        partition=partition,
        redelivery_count=redelivery_count,
        ack_set=ack_set,
    )


def ack_response(
    consumer_id: int, request_id: int, *, code: int | None = None, message: str | None = None
) -> pb.BaseCommand:
    body = pb.CommandAckResponse(consumer_id=consumer_id, request_id=request_id)
    if code is not None:
        body.error = _code(code)
    if message is not None:
        body.message = message
    return T(type=T.ACK_RESPONSE, ackResponse=body)


def lookup_response(
    request_id: int,
    broker_service_url: str,
    *,
    broker_service_url_tls: str | None = None,
    redirect: bool = False,
    authoritative: bool = False,
    proxy_through_service_url: bool = False,
) -> pb.BaseCommand:
    """LOOKUP_RESPONSE: Connect to the owner, or Redirect to ask another broker."""
    lookup_type = pb.CommandLookupTopicResponse
    body = lookup_type(
        request_id=request_id,
        brokerServiceUrl=broker_service_url,
        response=lookup_type.Redirect if redirect else lookup_type.Connect,
        authoritative=authoritative,
    )
    if broker_service_url_tls is not None:
        body.brokerServiceUrlTls = broker_service_url_tls
    if proxy_through_service_url:
        body.proxy_through_service_url = True
    return T(type=T.LOOKUP_RESPONSE, lookupTopicResponse=body)


def lookup_failed(request_id: int, code: int, message: str) -> pb.BaseCommand:
    lookup_type = pb.CommandLookupTopicResponse
    body = lookup_type(
        request_id=request_id, response=lookup_type.Failed, error=_code(code), message=message
    )
    return T(type=T.LOOKUP_RESPONSE, lookupTopicResponse=body)


def partitioned_metadata_response(request_id: int, partitions: int) -> pb.BaseCommand:
    """PARTITIONED_METADATA_RESPONSE; 0 partitions means a non-partitioned topic."""
    response = pb.CommandPartitionedTopicMetadataResponse
    body = response(request_id=request_id, partitions=partitions, response=response.Success)
    return T(type=T.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=body)


def partitioned_metadata_failed(request_id: int, code: int, message: str) -> pb.BaseCommand:
    response = pb.CommandPartitionedTopicMetadataResponse
    body = response(
        request_id=request_id, response=response.Failed, error=_code(code), message=message
    )
    return T(type=T.PARTITIONED_METADATA_RESPONSE, partitionMetadataResponse=body)


def get_last_message_id_response(
    request_id: int,
    last_message_id: pb.MessageIdData,
    *,
    consumer_mark_delete_position: pb.MessageIdData | None = None,
) -> pb.BaseCommand:
    body = pb.CommandGetLastMessageIdResponse(
        request_id=request_id, last_message_id=last_message_id
    )
    if consumer_mark_delete_position is not None:
        body.consumer_mark_delete_position.CopyFrom(consumer_mark_delete_position)
    return T(type=T.GET_LAST_MESSAGE_ID_RESPONSE, getLastMessageIdResponse=body)


def get_topics_of_namespace_response(
    request_id: int,
    topics: Iterable[str],
    *,
    filtered: bool = False,
    topics_hash: str | None = None,
    changed: bool = True,
) -> pb.BaseCommand:
    body = pb.CommandGetTopicsOfNamespaceResponse(request_id=request_id, topics=topics)
    if filtered:
        body.filtered = True
    if topics_hash is not None:
        body.topics_hash = topics_hash
    if not changed:
        body.changed = False
    return T(type=T.GET_TOPICS_OF_NAMESPACE_RESPONSE, getTopicsOfNamespaceResponse=body)


def get_schema_response(
    request_id: int, schema: pb.Schema, schema_version: bytes
) -> pb.BaseCommand:
    body = pb.CommandGetSchemaResponse(
        request_id=request_id, schema=schema, schema_version=schema_version
    )
    return T(type=T.GET_SCHEMA_RESPONSE, getSchemaResponse=body)


def get_schema_error(request_id: int, code: int, message: str) -> pb.BaseCommand:
    """GET_SCHEMA_RESPONSE carrying an error (TopicNotFound when there is no schema)."""
    body = pb.CommandGetSchemaResponse(
        request_id=request_id, error_code=_code(code), error_message=message
    )
    return T(type=T.GET_SCHEMA_RESPONSE, getSchemaResponse=body)


def get_or_create_schema_response(
    request_id: int,
    *,
    schema_version: bytes | None = None,
    code: int | None = None,
    message: str | None = None,
) -> pb.BaseCommand:
    body = pb.CommandGetOrCreateSchemaResponse(request_id=request_id)
    if schema_version is not None:
        body.schema_version = schema_version
    if code is not None:
        body.error_code = _code(code)
    if message is not None:
        body.error_message = message
    return T(type=T.GET_OR_CREATE_SCHEMA_RESPONSE, getOrCreateSchemaResponse=body)


def schema(
    name: str, schema_type: int, data: bytes, properties: dict[str, str] | None = None
) -> pb.Schema:
    """A Schema record; ``schema_type`` is a Schema.Type value."""
    record = pb.Schema(name=name, type=cast(pb.Schema.Type, schema_type), schema_data=data)
    for key, value in (properties or {}).items():
        record.properties.add(key=key, value=value)
    return record
