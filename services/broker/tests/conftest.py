"""Fixtures of the broker's tests: raw protocol connections to the session's standalone (the
`standalone`, `client` and `topic` fixtures come from the root conftest)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common.wire import pulsar_api_pb2 as pb


class RawConnection:
    """A hand-driven binary-protocol connection, for frames the official client never sends."""

    def __init__(self, port: int, timeout_s: float = 10.0,
                 receive_buffer_bytes: int | None = None) -> None:
        import socket

        from pulsar_common.wire import frame

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer_bytes is not None:
            # Before connecting, so that the TCP window stays this small.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer_bytes)
        self.sock.settimeout(timeout_s)
        self.sock.connect(("127.0.0.1", port))
        self.decoder = frame.FrameDecoder()
        self.frames: list[Any] = []
        self._request_ids = itertools.count(1)
        connect = pb.BaseCommand(type=pb.BaseCommand.CONNECT)
        connect.connect.client_version = "raw-test"
        connect.connect.protocol_version = 20
        assert self.request(connect).command.type == pb.BaseCommand.CONNECTED

    def next_request_id(self) -> int:
        return next(self._request_ids)

    def send(self, command: pb.BaseCommand) -> None:
        from pulsar_common.wire import frame

        self.sock.sendall(frame.encode_command(command))

    def request(self, command: pb.BaseCommand) -> Any:
        """Send command and return the next frame that is not a PING (answered)."""
        self.send(command)
        return self.read()

    def read(self) -> Any:
        """The next frame other than PING; raises TimeoutError after the socket's timeout."""
        while True:
            while not self.frames:
                data = self.sock.recv(1 << 20)
                if not data:
                    raise ConnectionError("closed by the broker")
                self.frames.extend(self.decoder.feed(data))
            received = self.frames.pop(0)
            if received.command.type == pb.BaseCommand.PING:
                self.send(pb.BaseCommand(type=pb.BaseCommand.PONG))
                continue
            return received

    def create_producer(self, topic: str, producer_id: int = 1) -> None:
        command = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
        command.producer.topic = topic
        command.producer.producer_id = producer_id
        command.producer.request_id = self.next_request_id()
        reply = self.request(command)
        assert reply.command.type == pb.BaseCommand.PRODUCER_SUCCESS, reply.command

    def send_entry(self, entry: bytes, producer_id: int = 1, sequence_id: int = 0,
                   num_messages: int | None = None) -> Any:
        """SEND entry (metadataSize | metadata | payload) with a valid checksum; the reply."""
        from pulsar_common.wire import frame

        command = pb.BaseCommand(type=pb.BaseCommand.SEND)
        command.send.producer_id = producer_id
        command.send.sequence_id = sequence_id
        if num_messages is not None:
            command.send.num_messages = num_messages
        header, body = frame.payload_frame_parts(command, entry)
        self.sock.sendall(header + bytes(body))
        return self.read()

    def closed_by_peer(self) -> bool:
        try:
            while True:
                if self.sock.recv(65536) == b"":
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw_connection(standalone: broker_testing.StandaloneProcess) -> Iterator[
        Callable[..., RawConnection]]:
    """Opens RawConnections to the test's `standalone`; all are closed after the test."""
    opened: list[RawConnection] = []

    def open_one(**options: Any) -> RawConnection:
        opened.append(RawConnection(standalone.broker_port, **options))
        return opened[-1]

    yield open_one
    for connection in opened:
        connection.close()
