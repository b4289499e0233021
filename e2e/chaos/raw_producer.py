"""A producer spoken in raw Pulsar frames, for tests that need to control each SEND and
see each reply (the official client hides both behind its resend logic)."""

from __future__ import annotations

import socket
import time

from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb


class RawProducer:
    """One connection with one producer (id 1) on `topic`."""

    def __init__(self, port: int, topic: str, producer_name: str | None = None,
                 timeout_s: float = 60.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.decoder = frame.FrameDecoder()
        self.pending: list[frame.Frame] = []
        connect = pb.BaseCommand(type=pb.BaseCommand.CONNECT)
        connect.connect.client_version = "raw-producer-test"
        connect.connect.protocol_version = 20
        self.sock.sendall(frame.encode_command(connect))
        assert self.read().command.type == pb.BaseCommand.CONNECTED
        producer = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
        producer.producer.topic = topic
        producer.producer.producer_id = 1
        producer.producer.request_id = 1
        if producer_name is not None:
            producer.producer.producer_name = producer_name
        self.sock.sendall(frame.encode_command(producer))
        reply = self.read()
        assert reply.command.type == pb.BaseCommand.PRODUCER_SUCCESS, reply.command
        self.name = reply.command.producer_success.producer_name
        self.last_sequence_id = reply.command.producer_success.last_sequence_id

    def send(self, sequence_id: int, payload: bytes | None = None) -> None:
        command = pb.BaseCommand(type=pb.BaseCommand.SEND)
        command.send.producer_id = 1
        command.send.sequence_id = sequence_id
        metadata = pb.MessageMetadata(producer_name=self.name, sequence_id=sequence_id,
                                      publish_time=int(time.time() * 1000))
        body = b"m%d" % sequence_id if payload is None else payload
        self.sock.sendall(frame.encode_payload_command(command, metadata, body))

    def read(self) -> frame.Frame:
        """The next frame other than PING (answered); AssertionError once the broker closed."""
        while True:
            while not self.pending:
                data = self.sock.recv(65536)
                assert data, "closed by the broker"
                self.pending.extend(self.decoder.feed(data))
            received = self.pending.pop(0)
            if received.command.type == pb.BaseCommand.PING:
                self.sock.sendall(frame.encode_command(pb.BaseCommand(type=pb.BaseCommand.PONG)))
                continue
            return received

    def close(self) -> None:
        self.sock.close()
