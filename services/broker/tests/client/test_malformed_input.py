"""Bad bytes close only the offending connection; other clients and stored data are fine."""

from __future__ import annotations

import socket
import struct

import pulsar

from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker.testing import receive_all


def _connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    command = pb.BaseCommand(type=pb.BaseCommand.CONNECT)
    command.connect.client_version = "raw-test"
    command.connect.protocol_version = 20
    sock.sendall(frame.encode_command(command))
    decoder = frame.FrameDecoder()
    frames = []
    while not frames:
        frames = decoder.feed(sock.recv(65536))
    assert frames[0].command.type == pb.BaseCommand.CONNECTED
    return sock


def _closed_by_peer(sock: socket.socket) -> bool:
    try:
        while True:
            if sock.recv(65536) == b"":
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def _with_a_working_client_around(standalone, topic, bad_bytes: bytes) -> None:
    client = pulsar.Client(standalone.service_url, operation_timeout_seconds=30)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"before")
    sock = _connect(standalone.broker_port)
    sock.sendall(bad_bytes)
    assert _closed_by_peer(sock)
    producer.send(b"after")
    assert [m.data() for m in receive_all(consumer, 2)] == [b"before", b"after"]
    client.close()


def test_garbage_closes_only_that_connection(standalone, topic):
    _with_a_working_client_around(standalone, topic, struct.pack(">II", 12, 8) + b"\xff" * 8)


def test_oversized_frame_closes_only_that_connection(standalone, topic):
    _with_a_working_client_around(standalone, topic, struct.pack(">I", 64 * 1024 * 1024) + b"x")


def test_unknown_command_closes_only_that_connection(standalone, topic):
    body = bytes([0x08, 0xE7, 0x07])  # type = 999
    _with_a_working_client_around(standalone, topic, struct.pack(">II", len(body) + 4,
                                                                 len(body)) + body)


def test_command_before_connect_closes_the_connection(standalone):
    sock = socket.create_connection(("127.0.0.1", standalone.broker_port), timeout=10)
    sock.sendall(frame.encode_command(pb.BaseCommand(type=pb.BaseCommand.PING)))
    assert _closed_by_peer(sock)


def test_bad_checksum_gets_send_error_and_nothing_is_stored(standalone, topic):
    sock = _connect(standalone.broker_port)
    producer = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
    producer.producer.topic = topic
    producer.producer.producer_id = 1
    producer.producer.request_id = 1
    sock.sendall(frame.encode_command(producer))
    decoder = frame.FrameDecoder()
    replies = []
    while not replies:
        replies = decoder.feed(sock.recv(65536))
    assert replies[0].command.type == pb.BaseCommand.PRODUCER_SUCCESS
    send = pb.BaseCommand(type=pb.BaseCommand.SEND)
    send.send.producer_id = 1
    send.send.sequence_id = 0
    metadata = pb.MessageMetadata(producer_name="raw", sequence_id=0, publish_time=1)
    data = bytearray(frame.encode_payload_command(send, metadata, b"payload"))
    data[-1] ^= 0xFF  # Corrupt the payload after the checksum was computed.
    sock.sendall(bytes(data))
    replies = []
    while not replies:
        replies = decoder.feed(sock.recv(65536))
    assert replies[0].command.type == pb.BaseCommand.SEND_ERROR
    assert replies[0].command.send_error.error == pb.ChecksumError
    sock.close()
    client = pulsar.Client(standalone.service_url)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert not reader.has_message_available()
    client.close()
