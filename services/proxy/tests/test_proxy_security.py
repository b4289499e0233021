"""The proxy as the secure front door: TLS ports for clients, TLS to a broker that has no
plain ports, token authentication at the proxy, its own token towards the broker
(a role in the broker's proxyRoles) and the client's role passed on as original_principal,
so that the broker authorizes the client."""

from __future__ import annotations

import json
import pathlib
import socket
import ssl
import struct
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import jwt
import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import client_auth, testing, testing_certs
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
SECRET = b"proxy-test-secret-of-32-bytes!!!"


def _token(role: str, secret: bytes = SECRET) -> str:
    return jwt.encode({"sub": role}, secret, algorithm="HS256")


class TlsProxyProcess(broker_testing.ProxyProcess):
    """A proxy with TLS ports for clients next to its plain ones."""

    def __init__(self, data_dir: pathlib.Path, overrides: dict[str, str]) -> None:
        super().__init__(data_dir, overrides)
        self.service_port_tls = testing.free_port()
        self.web_port_tls = testing.free_port()
        self.overrides.update({"servicePortTls": str(self.service_port_tls),
                               "webServicePortTls": str(self.web_port_tls)})

    def ready(self) -> bool:
        return super().ready() and testing.port_open(self.service_port_tls)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> testing_certs.Pki:
    return testing_certs.make_pki(tmp_path_factory.mktemp("proxy-pki"), hosts=("localhost",))


@pytest.fixture(scope="module")
def secret_file(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("secret") / "secret.key"
    path.write_bytes(SECRET)
    return path


@pytest.fixture(scope="module")
def secure_broker(tmp_path_factory: pytest.TempPathFactory, pki: testing_certs.Pki,
                  secret_file: pathlib.Path) -> Iterator[broker_testing.TlsStandaloneProcess]:
    """TLS ports only; token authentication and authorization; superusers admin and proxy (the
    proxy role, whose clients must still be authorized themselves)."""
    settings = {**testing_certs.broker_tls_settings(pki),
                "authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
                "tokenSecretKey": f"file://{secret_file}", "authorizationEnabled": "true",
                "superUserRoles": "admin,proxy", "proxyRoles": "proxy"}
    process = broker_testing.TlsStandaloneProcess(
        tmp_path_factory.mktemp("secure-broker") / "data", settings,
        {"journalSyncData": "false"}, plain=False, host="localhost")
    process.start()
    _grant(process, pki, "public/default", "alice", ["produce", "consume"])
    yield process
    process.stop()


def _https(url: str, pki: testing_certs.Pki, token: str | None = None, method: str = "GET",
           body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, method=method,
                                     data=None if body is None else json.dumps(body).encode())
    request.add_header("Content-Type", "application/json")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    context = ssl.create_default_context(cafile=str(pki.trust_file))
    try:
        with urllib.request.urlopen(request, timeout=30, context=context) as reply:
            text = reply.read()
            return reply.status, json.loads(text) if text else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _grant(broker: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki, namespace: str,
           role: str, actions: list[str]) -> None:
    status, text = _https(f"{broker.web_url_tls}/admin/v2/namespaces/{namespace}/permissions/"
                          f"{role}", pki, _token("admin"), "POST", actions)
    assert status in (200, 204), text


@pytest.fixture(scope="module")
def secure_proxy(tmp_path_factory: pytest.TempPathFactory, pki: testing_certs.Pki,
                 secret_file: pathlib.Path, secure_broker: broker_testing.TlsStandaloneProcess,
                 ) -> Iterator[TlsProxyProcess]:
    settings = {
        "brokerServiceURLTLS": secure_broker.service_url_tls,
        "brokerWebServiceURLTLS": secure_broker.web_url_tls,
        "tlsEnabledWithBroker": "true",
        "brokerClientTrustCertsFilePath": str(pki.trust_file),
        "tlsHostnameVerificationEnabled": "true",
        "tlsCertificateFilePath": str(pki.server.cert),
        "tlsKeyFilePath": str(pki.server.key),
        "authenticationEnabled": "true",
        "authenticationProviders": TOKEN_PROVIDER,
        "tokenSecretKey": f"file://{secret_file}",
        "brokerClientAuthenticationPlugin": client_auth.TOKEN_PLUGIN,
        "brokerClientAuthenticationParameters": f"token:{_token('proxy')}",
        "forwardAuthorizationCredentials": "true",
        "advertisedAddress": "localhost",
    }
    process = TlsProxyProcess(tmp_path_factory.mktemp("secure-proxy"), settings).start()
    yield process
    process.stop()


def _client(proxy: TlsProxyProcess, pki: testing_certs.Pki,
            token: str | None, timeout_s: int = 10) -> pulsar.Client:
    return pulsar.Client(
        f"pulsar+ssl://localhost:{proxy.service_port_tls}", operation_timeout_seconds=timeout_s,
        tls_trust_certs_file_path=str(pki.trust_file), tls_validate_hostname=True,
        authentication=None if token is None else pulsar.AuthenticationToken(token),
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def _topic() -> str:
    return f"persistent://public/default/secure-{uuid.uuid4().hex[:10]}"


def test_a_permitted_client_produces_and_consumes_through_the_tls_proxy(
        secure_proxy: TlsProxyProcess, pki: testing_certs.Pki) -> None:
    client = _client(secure_proxy, pki, _token("alice"))
    topic = _topic()
    try:
        consumer = client.subscribe(topic, "alice-sub")
        producer = client.create_producer(topic)
        for i in range(5):
            producer.send(f"secret-{i}".encode())
        got = [consumer.receive(timeout_millis=10_000).data() for _ in range(5)]
        assert got == [f"secret-{i}".encode() for i in range(5)]
    finally:
        client.close()


@pytest.mark.parametrize("token", [None, _token("alice", b"x" * 32)],
                         ids=["no-token", "wrong-signature"])
def test_the_proxy_refuses_clients_it_cannot_authenticate(
        secure_proxy: TlsProxyProcess, pki: testing_certs.Pki, token: str | None) -> None:
    connect = pb.CommandConnect(client_version="raw-test", protocol_version=20)
    if token is not None:
        connect.auth_method_name, connect.auth_data = "token", token.encode()
    context = ssl.create_default_context(cafile=str(pki.trust_file))
    with (socket.create_connection(("localhost", secure_proxy.service_port_tls), timeout=10)
          as raw, context.wrap_socket(raw, server_hostname="localhost") as sock):
        sock.sendall(frame.encode_command(pb.BaseCommand(type=pb.BaseCommand.CONNECT,
                                                         connect=connect)))
        reader = sock.makefile("rb")
        head = reader.read(4)
        reply = frame.decode_frame(reader.read(struct.unpack(">I", head)[0])).command
        assert reply.type == pb.BaseCommand.ERROR
        assert reply.error.error == pb.AuthenticationError
        assert reader.read(1) == b""  # and the connection is closed
    client = _client(secure_proxy, pki, token, timeout_s=3)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(_topic())
    finally:
        client.close()


def test_the_broker_refuses_a_role_without_permission_behind_the_proxy(
        secure_proxy: TlsProxyProcess, pki: testing_certs.Pki) -> None:
    """The proxy itself may do anything it is granted; the client's role decides."""
    client = _client(secure_proxy, pki, _token("mallory"))
    try:
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(_topic())
    finally:
        client.close()


def test_https_admin_through_the_proxy_needs_a_token(
        secure_proxy: TlsProxyProcess, pki: testing_certs.Pki) -> None:
    base = f"https://localhost:{secure_proxy.web_port_tls}"
    status, tenants = _https(f"{base}/admin/v2/tenants", pki, _token("admin"))
    assert status == 200 and "public" in tenants
    status, _ = _https(f"{base}/admin/v2/tenants", pki)
    assert status == 401
    status, _ = _https(f"{base}/admin/v2/tenants", pki, _token("mallory"))
    assert status in (401, 403)
