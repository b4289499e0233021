"""GET_OR_CREATE_SCHEMA (sent by the Java client, not the wheel's C++ one) over a raw socket."""

from __future__ import annotations

import json
import socket
import uuid

from pulsar_common.wire import commands, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker import testing as broker_testing

T = pb.BaseCommand


def _definition(*names: str) -> bytes:
    fields = [{"name": n, "type": "long"} for n in names]
    return json.dumps({"type": "record", "name": "R", "fields": fields}).encode()


class RawConnection:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.decoder = frame.FrameDecoder()
        connect = T(type=T.CONNECT)
        connect.connect.client_version = "raw-schema-test"
        connect.connect.protocol_version = 20
        assert self.call(connect).type == T.CONNECTED

    def call(self, command: pb.BaseCommand) -> pb.BaseCommand:
        self.sock.sendall(frame.encode_command(command))
        while True:
            frames = self.decoder.feed(self.sock.recv(65536))
            for received in frames:
                if received.command.type != T.PING:
                    return received.command

    def get_or_create(self, request_id: int, topic: str, data: bytes
                      ) -> pb.CommandGetOrCreateSchemaResponse:
        command = T(type=T.GET_OR_CREATE_SCHEMA)
        command.getOrCreateSchema.request_id = request_id
        command.getOrCreateSchema.topic = topic
        command.getOrCreateSchema.schema.CopyFrom(commands.schema("R", pb.Schema.Avro, data))
        reply = self.call(command)
        assert reply.type == T.GET_OR_CREATE_SCHEMA_RESPONSE
        assert reply.getOrCreateSchemaResponse.request_id == request_id
        return reply.getOrCreateSchemaResponse

    def get_schema(self, request_id: int, topic: str, version: int) -> pb.CommandGetSchemaResponse:
        command = T(type=T.GET_SCHEMA)
        command.getSchema.request_id = request_id
        command.getSchema.topic = topic
        command.getSchema.schema_version = version.to_bytes(8, "big")
        reply = self.call(command)
        assert reply.type == T.GET_SCHEMA_RESPONSE
        return reply.getSchemaResponse


def test_get_or_create_registers_checks_and_answers(
        standalone: broker_testing.StandaloneProcess) -> None:
    topic = f"persistent://public/default/raw-{uuid.uuid4().hex[:8]}"
    raw = RawConnection(standalone.broker_port)
    try:
        first = raw.get_or_create(1, topic, _definition("a"))
        assert not first.HasField("error_code") and first.schema_version == bytes(8)
        assert raw.get_or_create(2, topic, _definition("a")).schema_version == bytes(8)
        # FULL: a field without default cannot be added.
        refused = raw.get_or_create(3, topic, _definition("a", "b"))
        assert refused.error_code == pb.IncompatibleSchema and "b" in refused.error_message
        found = raw.get_schema(4, topic, 0)
        assert found.schema.type == pb.Schema.Avro and found.schema.schema_data == _definition("a")
        assert found.schema_version == bytes(8)
        assert raw.get_schema(5, topic, 9).error_code == pb.TopicNotFound
    finally:
        raw.sock.close()
