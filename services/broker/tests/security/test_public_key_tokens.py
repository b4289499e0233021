"""A broker validating RS256 tokens with `tokenPublicKey`, keys and tokens made by `pulsar
tokens`, and an `anonymousUserRole`: real tokens work; a token signed with HMAC using the
public key as its secret, or with `alg: none`, is refused on both front doors (never
downgraded to the anonymous role); clients without credentials act as the anonymous role."""

from __future__ import annotations

import base64
import contextlib
import hmac
import io
import json
import pathlib
import urllib.error
import urllib.request
from collections.abc import Iterator

import pulsar
import pytest
from cryptography.hazmat.primitives import serialization
from pulsar_broker import testing as broker_testing
from pulsar_common.auth import keys
from pulsar_common.cli import main
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

T = pb.BaseCommand


def tokens_cli(*args: str) -> str:
    """`pulsar tokens <args>` run in this process (the CLI's own code, without a new
    interpreter per token); its standard output."""
    parser = main.build_parser({"tokens": main.COMMANDS["tokens"]})
    parsed = parser.parse_args(["tokens", *args])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert parsed.run(parsed) == 0
    return out.getvalue().strip()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Broker:
    def __init__(self, process: broker_testing.StandaloneProcess, private: pathlib.Path,
                 public: pathlib.Path) -> None:
        self.process, self.private, self.public = process, private, public

    def token(self, role: str) -> str:
        return tokens_cli("create", "--private-key", f"file://{self.private}", "-s", role)

    def connect(self, token: str | None) -> pb.BaseCommand:
        import socket
        with socket.create_connection(("127.0.0.1", self.process.broker_port), timeout=10) as s:
            command = T(type=T.CONNECT)
            command.connect.client_version = "raw-test"
            command.connect.protocol_version = 20
            if token is not None:
                command.connect.auth_method_name = "token"
                command.connect.auth_data = token.encode()
            s.sendall(frame.encode_command(command))
            decoder = frame.FrameDecoder()
            while True:
                chunk = s.recv(65536)
                assert chunk, "closed without a reply"
                frames = decoder.feed(chunk)
                if frames:
                    return frames[0].command

    def http_status(self, token: str | None, path: str = "/admin/v2/tenants",
                    method: str = "GET", body: bytes | None = None) -> int:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(f"{self.process.web_url}{path}", data=body,
                                         method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as exc:
            return exc.code


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    root = tmp_path_factory.mktemp("rs256")
    private, public = root / "private.key", root / "public.key"
    tokens_cli("create-key-pair", "--output-private-key", str(private),
               "--output-public-key", str(public))
    process = broker_testing.StandaloneProcess(root / "data", {
        "authenticationEnabled": "true",
        "authenticationProviders":
            "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
        "tokenPublicKey": f"file://{public}",
        "authorizationEnabled": "true",
        "superUserRoles": "admin",
        "anonymousUserRole": "guest",
        "journalSyncData": "false",
    })
    process.extra_arguments = ["--no-functions-worker"]
    process.start()
    try:
        yield Broker(process, private, public)
    finally:
        process.stop()


def test_cli_made_rs256_tokens_serve_the_official_client(broker: Broker) -> None:
    client = pulsar.Client(broker.process.service_url,
                           authentication=pulsar.AuthenticationToken(broker.token("admin")),
                           operation_timeout_seconds=10)
    try:
        client.create_producer("persistent://public/default/rs256").send(b"signed")
    finally:
        client.close()
    assert broker.http_status(broker.token("admin")) == 200


def test_public_key_as_hmac_secret_and_alg_none_are_refused(broker: Broker) -> None:
    public = keys.public_key(broker.public.read_bytes())
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    payload = b64url(json.dumps({"sub": "admin"}).encode())
    forged = []
    for encoding in (serialization.Encoding.DER, serialization.Encoding.PEM):
        secret = public.public_bytes(encoding, serialization.PublicFormat.SubjectPublicKeyInfo)
        signature = hmac.new(secret, f"{header}.{payload}".encode(), "sha256").digest()
        forged.append(f"{header}.{payload}.{b64url(signature)}")
    forged.append(b64url(json.dumps({"alg": "none"}).encode()) + f".{payload}.")
    for token in forged:
        reply = broker.connect(token)
        assert reply.type == T.ERROR and reply.error.error == pb.AuthenticationError, reply
        assert broker.http_status(token) == 401


def test_clients_without_credentials_act_as_the_anonymous_role(broker: Broker) -> None:
    assert broker.connect(None).type == T.CONNECTED
    assert broker.http_status(None) == 403  # authenticated as guest, not a superuser
    topic = "persistent://public/default/for-guests"
    anonymous = pulsar.Client(broker.process.service_url, operation_timeout_seconds=10)
    try:
        with pytest.raises(pulsar.AuthorizationError):
            anonymous.create_producer(topic)
        assert broker.http_status(broker.token("admin"),
                                  "/admin/v2/namespaces/public/default/permissions/guest",
                                  "POST", b'["produce"]') == 204
        anonymous.create_producer(topic).send(b"from a guest")
    finally:
        anonymous.close()
