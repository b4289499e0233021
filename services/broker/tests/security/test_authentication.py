"""Authentication on the binary protocol and over HTTP: the official client with tokens and
basic credentials is served; every connection without valid credentials is refused and
changes nothing."""

from __future__ import annotations

import base64
import json
import time
import uuid

import pulsar
import pytest
from pulsar_common.auth import token as auth_token
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def topic_in(tenant: str) -> str:
    return f"persistent://{tenant}/ns/t-{uuid.uuid4().hex[:8]}"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_token_and_basic_clients_produce_and_consume(secured) -> None:
    tenant = secured.tenant(admins=("alice", "bcuser", "md5user"))
    topic = topic_in(tenant)
    with_token = secured.client("alice")
    with_basic = secured.client(auth=pulsar.AuthenticationBasic("bcuser", "bcpass"))
    with_md5 = secured.client(auth=pulsar.AuthenticationBasic("md5user", "md5pass"))
    try:
        consumer = with_basic.subscribe(topic, "sub")
        with_token.create_producer(topic).send(b"from-token")
        with_md5.create_producer(topic).send(b"from-md5")
        received = {consumer.receive(10_000).data() for _ in range(2)}
        assert received == {b"from-token", b"from-md5"}
    finally:
        for client in (with_token, with_basic, with_md5):
            client.close()


def _refused_connect(secured, method: str | None, data: bytes = b"") -> str:
    sock, reply = secured.raw_connect(method, data)
    try:
        assert reply.type == T.ERROR, reply
        assert reply.error.error == pb.AuthenticationError
        assert secured.closed(sock)
        return str(reply.error.message)
    finally:
        sock.close()


def test_connect_without_valid_credentials_is_refused_and_closed(secured) -> None:
    now = time.time()
    other_secret = b"x" * 32
    unsigned = (b64url(json.dumps({"alg": "none"}).encode()) + "."
                + b64url(json.dumps({"sub": "admin"}).encode()) + ".")
    cases = {
        "no credentials": (None, b""),
        "wrong method name": ("oauth2", b"anything"),
        "expired token": ("token", auth_token.create(secured.secret_key, "admin",
                                                     expires_at_s=now - 5).encode()),
        "wrong signature": ("token", auth_token.create(other_secret, "admin").encode()),
        "alg none": ("token", unsigned.encode()),
        "garbage token": ("token", b"not.a.jwt"),
        "wrong password": ("basic", b"bcuser:wrong"),
        "unknown user": ("basic", b"mallory:bcpass"),
    }
    for name, (method, data) in cases.items():
        reason = _refused_connect(secured, method, data)
        assert reason, name
    assert "expired" in _refused_connect(secured, *cases["expired token"])


def test_the_official_client_without_credentials_gets_nothing(secured) -> None:
    tenant = secured.tenant()
    topic = topic_in(tenant)
    anonymous = secured.client(timeout_s=3)
    wrong = secured.client(auth=pulsar.AuthenticationToken(
        auth_token.create(b"y" * 32, "admin")), timeout_s=3)
    try:
        for client in (anonymous, wrong):
            with pytest.raises((pulsar.Timeout, pulsar.ConnectError, pulsar.AuthenticationError)):
                client.create_producer(topic)
    finally:
        anonymous.close()
        wrong.close()
    assert secured.stored(topic) == []


def test_original_principal_is_honoured_only_from_proxy_roles(secured) -> None:
    sock, reply = secured.raw_connect("token", secured.token("mallory").encode(),
                                      original_principal="admin")
    try:
        assert reply.type == T.ERROR and reply.error.error == pb.AuthenticationError
    finally:
        sock.close()
    sock, reply = secured.raw_connect("token", secured.token("proxy").encode(),
                                      original_principal="someone")
    sock.close()
    assert reply.type == T.CONNECTED


def test_http_requires_credentials_and_accepts_bearer_and_basic(secured) -> None:
    status, reply = secured.http("GET", "/admin/v2/tenants", role=None)
    assert status == 401 and "reason" in reply
    status, _ = secured.http("GET", "/admin/v2/tenants", role=None,
                             headers={"Authorization": "Bearer " + auth_token.create(
                                 b"z" * 32, "admin")})
    assert status == 401
    assert secured.http("GET", "/admin/v2/tenants")[0] == 200
    tenant = secured.tenant(admins=("bcuser",))
    status, namespaces = secured.http("GET", f"/admin/v2/namespaces/{tenant}", role=None,
                                      headers=secured.basic_header("bcuser", "bcpass"))
    assert (status, namespaces) == (200, [f"{tenant}/ns"])
    status, _ = secured.http("GET", f"/admin/v2/namespaces/{tenant}", role=None,
                             headers=secured.basic_header("bcuser", "nope"))
    assert status == 401


def test_probes_and_metrics_stay_open(secured) -> None:
    for path in ("/status.html", "/admin/v2/brokers/ready", "/metrics"):
        assert secured.http("GET", path, role=None)[0] == 200, path


def test_frames_sent_after_a_refused_connect_are_not_handled(secured) -> None:
    import socket

    from pulsar_common.wire import frame

    tenant = secured.tenant()
    topic = f"persistent://{tenant}/ns/t-{uuid.uuid4().hex[:8]}"
    refused = T(type=T.CONNECT)
    refused.connect.client_version = "raw-test"
    refused.connect.protocol_version = 20
    accepted = T(type=T.CONNECT)
    accepted.CopyFrom(refused)
    accepted.connect.auth_method_name = "token"
    accepted.connect.auth_data = secured.token("admin").encode()
    producer = T(type=T.PRODUCER)
    producer.producer.topic = topic
    producer.producer.producer_id = 1
    producer.producer.request_id = 1
    with socket.create_connection(("127.0.0.1", secured.process.broker_port), timeout=10) as s:
        s.sendall(b"".join(frame.encode_command(c) for c in (refused, accepted, producer)))
        decoder = frame.FrameDecoder()
        replies = []
        while chunk := s.recv(65536):
            replies += [f.command.type for f in decoder.feed(chunk)]
    assert replies == [T.ERROR]
    assert secured.ok("GET", f"/admin/v2/persistent/{tenant}/ns") == []


def test_http_original_principal_counts_only_from_proxy_roles(secured) -> None:
    header = "X-Original-Principal"
    assert secured.http("GET", "/admin/v2/tenants", role="proxy",
                        headers={header: "admin"})[0] == 200
    # Both the proxy's role and its client's must be allowed.
    assert secured.http("GET", "/admin/v2/tenants", role="proxy",
                        headers={header: "outsider"})[0] == 403
    # Any other role naming a principal is just itself.
    assert secured.http("GET", "/admin/v2/tenants", role="mallory",
                        headers={header: "admin"})[0] == 403
