"""Expiring tokens on live connections: the broker challenges (AUTH_CHALLENGE) once a token
has expired; a client whose token supplier gives a fresh token keeps its connection, one
that cannot refresh is disconnected and cannot come back."""

from __future__ import annotations

import time
import uuid

import pulsar
import pytest
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

#: The standalone checks expiring credentials every second (authenticationRefreshCheckSeconds).
TOKEN_LIFETIME_S = 2


def test_a_refreshing_client_keeps_producing_past_its_tokens_expiry(secured) -> None:
    tenant = secured.tenant(admins=("refresher",))
    topic = f"persistent://{tenant}/ns/t-{uuid.uuid4().hex[:8]}"
    issued: list[str] = []

    def supplier() -> str:
        issued.append(secured.token("refresher", expires_in_s=TOKEN_LIFETIME_S))
        return issued[-1]

    client = secured.client(auth=pulsar.AuthenticationToken(supplier))
    try:
        producer = client.create_producer(topic, send_timeout_millis=5000)
        sent = []
        deadline = time.monotonic() + 20
        # Two refreshes: the connection outlived two tokens.
        while len(issued) < 3:
            assert time.monotonic() < deadline, f"only {len(issued)} tokens asked for"
            payload = f"m-{len(sent)}".encode()
            producer.send(payload)
            sent.append(payload)
            time.sleep(0.2)
    finally:
        client.close()
    assert secured.stored(topic) == sent
    assert "refreshed its credentials (refresher)" in secured.process.log_text()


def test_a_client_that_cannot_refresh_is_disconnected_and_refused(secured) -> None:
    tenant = secured.tenant(admins=("stale",))
    topic = f"persistent://{tenant}/ns/t-{uuid.uuid4().hex[:8]}"
    client = secured.client(auth=pulsar.AuthenticationToken(
        secured.token("stale", expires_in_s=TOKEN_LIFETIME_S)), timeout_s=3)
    try:
        producer = client.create_producer(topic, send_timeout_millis=2000)
        producer.send(b"while valid")
        deadline = time.monotonic() + 20
        with pytest.raises((pulsar.Timeout, pulsar.AuthenticationError, pulsar.ConnectError,
                            pulsar.AlreadyClosed)):
            while time.monotonic() < deadline:
                producer.send(b"late")
                time.sleep(0.2)
    finally:
        client.close()
    stored = secured.stored(topic)
    assert stored[0] == b"while valid"
    log = secured.process.log_text()
    assert "Unable to refresh credentials" in log or "not refreshed in time" in log


def _read(sock) -> pb.BaseCommand:
    decoder = frame.FrameDecoder()
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed by the broker")
        for received in decoder.feed(chunk):
            if received.command.type == pb.BaseCommand.PING:
                sock.sendall(frame.encode_command(pb.BaseCommand(type=pb.BaseCommand.PONG)))
                continue
            return received.command


def test_refreshed_credentials_must_name_the_same_role(secured) -> None:
    sock, reply = secured.raw_connect(
        "token", secured.token("first-role", expires_in_s=TOKEN_LIFETIME_S).encode(),
        supports_auth_refresh=True)
    try:
        assert reply.type == pb.BaseCommand.CONNECTED
        sock.settimeout(TOKEN_LIFETIME_S + 10)
        challenge = _read(sock)
        assert challenge.type == pb.BaseCommand.AUTH_CHALLENGE
        assert challenge.authChallenge.challenge.auth_method_name == "token"
        response = pb.BaseCommand(type=pb.BaseCommand.AUTH_RESPONSE)
        response.authResponse.response.auth_method_name = "token"
        response.authResponse.response.auth_data = secured.token("other-role").encode()
        sock.sendall(frame.encode_command(response))
        refusal = _read(sock)
        assert refusal.type == pb.BaseCommand.ERROR
        assert refusal.error.error == pb.AuthenticationError
        assert secured.closed(sock)
    finally:
        sock.close()


def test_a_client_without_refresh_support_is_closed_when_its_token_expires(secured) -> None:
    sock, reply = secured.raw_connect(
        "token", secured.token("old-client", expires_in_s=TOKEN_LIFETIME_S).encode())
    try:
        assert reply.type == pb.BaseCommand.CONNECTED
        sock.settimeout(TOKEN_LIFETIME_S + 10)
        refusal = _read(sock)
        assert refusal.type == pb.BaseCommand.ERROR, refusal
        assert secured.closed(sock)
    finally:
        sock.close()
