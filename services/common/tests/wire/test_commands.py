"""Broker command constructors, error-code enums and the .proto facts clients rely on."""

from __future__ import annotations

import pytest
from pulsar_common.wire import codes, commands, entry, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand
Err = codes.ServerError

SCHEMA = commands.schema("s", pb.Schema.Json, b"{}", {"k": "v"})

ALL_CONSTRUCTED = [
    (commands.connected("v", 20, max_message_size=100), T.CONNECTED),
    (commands.ping(), T.PING),
    (commands.pong(), T.PONG),
    (commands.success(1), T.SUCCESS),
    (commands.success(1, schema=SCHEMA), T.SUCCESS),
    (commands.error(1, Err.TopicNotFound, "no"), T.ERROR),
    (
        commands.producer_success(1, "p", last_sequence_id=5, schema_version=b"\x01"),
        T.PRODUCER_SUCCESS,
    ),
    (commands.send_receipt(1, 2, 3, 4, highest_sequence_id=9), T.SEND_RECEIPT),
    (commands.send_error(1, 2, Err.ChecksumError, "crc"), T.SEND_ERROR),
    (commands.close_producer(1, 2), T.CLOSE_PRODUCER),
    (commands.close_consumer(1, 2), T.CLOSE_CONSUMER),
    (commands.active_consumer_change(1, True), T.ACTIVE_CONSUMER_CHANGE),
    (commands.reached_end_of_topic(1), T.REACHED_END_OF_TOPIC),
    (commands.message(1, 2, 3, redelivery_count=1, ack_set=[5]), T.MESSAGE),
    (commands.ack_response(1, 2), T.ACK_RESPONSE),
    (commands.ack_response(1, 2, code=Err.NotAllowedError, message="x"), T.ACK_RESPONSE),
    (commands.lookup_response(1, "pulsar://h:6650", authoritative=True), T.LOOKUP_RESPONSE),
    (commands.lookup_failed(1, Err.ServiceNotReady, "later"), T.LOOKUP_RESPONSE),
    (commands.partitioned_metadata_response(1, 4), T.PARTITIONED_METADATA_RESPONSE),
    (
        commands.partitioned_metadata_failed(1, Err.MetadataError, "x"),
        T.PARTITIONED_METADATA_RESPONSE,
    ),
    (
        commands.get_last_message_id_response(
            1, entry.message_id(3, 4), consumer_mark_delete_position=entry.message_id(3, 2)
        ),
        T.GET_LAST_MESSAGE_ID_RESPONSE,
    ),
    (
        commands.get_topics_of_namespace_response(1, ["a", "b"], topics_hash="h"),
        T.GET_TOPICS_OF_NAMESPACE_RESPONSE,
    ),
    (commands.get_schema_response(1, SCHEMA, b"\x00\x01"), T.GET_SCHEMA_RESPONSE),
    (commands.get_schema_error(1, Err.TopicNotFound, "none"), T.GET_SCHEMA_RESPONSE),
    (
        commands.get_or_create_schema_response(1, schema_version=b"\x02"),
        T.GET_OR_CREATE_SCHEMA_RESPONSE,
    ),
]


@pytest.mark.parametrize(
    ("command", "kind"), ALL_CONSTRUCTED, ids=[T.Type.Name(k) for _, k in ALL_CONSTRUCTED]
)
def test_constructed_commands_encode_and_decode_unchanged(
    command: pb.BaseCommand, kind: int
) -> None:
    assert command.type == kind
    encoded = frame.encode_command(command)  # raises if a required field were missing
    [decoded] = frame.FrameDecoder().feed(encoded)
    assert decoded.command == command


def test_send_receipt_golden_bytes() -> None:
    body = commands.send_receipt(1, 2, 7, 0).SerializeToString()
    assert body.hex() == (
        "0807"  # type = SEND_RECEIPT (7)
        "3a0a"  # field 7 (send_receipt), length 10
        "0801"  # producer_id = 1
        "1002"  # sequence_id = 2
        "1a04"
        "0807"
        "1000"  # message_id {ledgerId 7, entryId 0}
    )


def test_duplicate_receipt_uses_minus_one_ids() -> None:
    receipt = commands.send_receipt(1, 2, -1, -1).send_receipt
    assert (receipt.message_id.ledgerId, receipt.message_id.entryId) == (2**64 - 1, 2**64 - 1)


def test_prebuilt_ping_and_pong_frames() -> None:
    assert commands.PING_FRAME.hex() == "00000009000000050812920100"
    assert commands.PONG_FRAME.hex() == "000000090000000508139a0100"


def test_connected_announces_features_and_limit() -> None:
    connected = commands.connected(
        "pulsar-py", 20, max_message_size=5 << 20, supports_broker_entry_metadata=True
    ).connected
    assert (connected.server_version, connected.protocol_version) == ("pulsar-py", 20)
    assert connected.max_message_size == 5 << 20
    assert connected.feature_flags.supports_broker_entry_metadata
    assert not connected.feature_flags.supports_topic_watchers


def test_optional_fields_stay_unset_unless_given() -> None:
    success = commands.producer_success(1, "p").producer_success
    assert not success.HasField("schema_version") and success.producer_ready
    assert commands.producer_success(1, "p", producer_ready=False).producer_success.HasField(
        "producer_ready"
    )
    lookup = commands.lookup_response(1, "pulsar://h:1").lookupTopicResponse
    assert lookup.response == pb.CommandLookupTopicResponse.Connect
    assert not lookup.HasField("brokerServiceUrlTls")
    redirect = commands.lookup_response(1, "pulsar://h:1", redirect=True).lookupTopicResponse
    assert redirect.response == pb.CommandLookupTopicResponse.Redirect


def test_server_error_enum_mirrors_the_proto() -> None:
    proto_values = {v.name: v.number for v in pb.ServerError.DESCRIPTOR.values}
    assert {e.name: e.value for e in codes.ServerError} == proto_values


def test_protocol_version_negotiation_takes_the_lower_version() -> None:
    latest = max(v.number for v in pb.ProtocolVersion.DESCRIPTOR.values)
    assert codes.ProtocolVersion.LATEST == latest == 21
    assert codes.negotiate(20) == 20
    assert codes.negotiate(99) == 21
    assert codes.negotiate(-3) == 0
    assert not codes.supports_checksum(5) and codes.supports_checksum(6)


# Facts the official clients depend on: a wrong number here breaks interop.
@pytest.mark.parametrize(
    ("message", "field", "number", "kind"),
    [
        (pb.MessageMetadata, "producer_name", 1, "TYPE_STRING"),
        (pb.MessageMetadata, "sequence_id", 2, "TYPE_UINT64"),
        (pb.MessageMetadata, "publish_time", 3, "TYPE_UINT64"),
        (pb.MessageMetadata, "num_messages_in_batch", 11, "TYPE_INT32"),
        (pb.MessageMetadata, "ordering_key", 18, "TYPE_BYTES"),
        (pb.MessageMetadata, "deliver_at_time", 19, "TYPE_INT64"),
        (pb.MessageMetadata, "null_partition_key", 30, "TYPE_BOOL"),
        (pb.SingleMessageMetadata, "payload_size", 3, "TYPE_INT32"),
        (pb.SingleMessageMetadata, "sequence_id", 8, "TYPE_UINT64"),
        (pb.BrokerEntryMetadata, "index", 2, "TYPE_UINT64"),
        (pb.MessageIdData, "first_chunk_message_id", 7, "TYPE_MESSAGE"),
        (pb.CommandSubscribe, "keySharedMeta", 17, "TYPE_MESSAGE"),
        (pb.KeySharedMeta, "hashRanges", 3, "TYPE_MESSAGE"),
        (pb.CommandAck, "request_id", 8, "TYPE_UINT64"),
        (pb.CommandConnected, "feature_flags", 4, "TYPE_MESSAGE"),
        (pb.CommandConnect, "feature_flags", 10, "TYPE_MESSAGE"),
        (pb.BaseCommand, "topicMigrated", 68, "TYPE_MESSAGE"),
    ],
)
def test_wire_facts(message: type, field: str, number: int, kind: str) -> None:
    descriptor = message.DESCRIPTOR.fields_by_name[field]  # type: ignore[attr-defined]
    assert descriptor.number == number
    assert descriptor.type == getattr(descriptor, kind)


def test_command_type_numbers_match_their_body_fields() -> None:
    fields = pb.BaseCommand.DESCRIPTOR.fields_by_number
    for value in pb.BaseCommand.Type.DESCRIPTOR.values:
        assert value.number in fields, value.name
    numbers = {v.name: v.number for v in pb.BaseCommand.Type.DESCRIPTOR.values}
    assert (numbers["CONNECT"], numbers["SEND"], numbers["MESSAGE"], numbers["PING"]) == (
        2,
        6,
        9,
        18,
    )
    assert (numbers["ACK_RESPONSE"], numbers["NEW_TXN"], numbers["TOPIC_MIGRATED"]) == (38, 50, 68)
    assert len(numbers) == 39 + 19
