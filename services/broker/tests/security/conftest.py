"""A `pulsar standalone` started with Apache's security settings in a config file: token and
basic authentication, authorization, superuser `admin`; helpers to talk to it as a role."""

from __future__ import annotations

import base64
import dataclasses
import json
import secrets
import socket
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import bcrypt
import pulsar
import pytest
from passlib import hash as passlib_hash
from pulsar_broker import testing as broker_testing
from pulsar_common.auth import token as auth_token
from pulsar_common.wire import frame
from pulsar_common.wire import pulsar_api_pb2 as pb

SUPERUSER = "admin"
#: Seconds between the broker's checks of expiring credentials, short for the refresh tests.
REFRESH_CHECK_S = 1
PROVIDERS = ",".join(f"org.apache.pulsar.broker.authentication.{name}"
                     for name in ("AuthenticationProviderToken", "AuthenticationProviderBasic"))


@dataclasses.dataclass
class Secured:
    process: broker_testing.StandaloneProcess
    secret_key: bytes

    def token(self, role: str, expires_in_s: float | None = None) -> str:
        expires = None if expires_in_s is None else time.time() + expires_in_s
        return auth_token.create(self.secret_key, role, expires_at_s=expires)

    def client(self, role: str | None = None, *, auth: Any = None, **options: Any) -> pulsar.Client:
        if auth is None and role is not None:
            auth = pulsar.AuthenticationToken(self.token(role))
        return pulsar.Client(self.process.service_url, authentication=auth,
                             operation_timeout_seconds=options.pop("timeout_s", 10),
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **options)

    def http(self, method: str, path: str, body: Any = None, *, role: str | None = SUPERUSER,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """(status, parsed JSON body or None) of an admin request made as role."""
        sent = dict(headers or {})
        if role is not None:
            sent["Authorization"] = f"Bearer {self.token(role)}"
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        request = urllib.request.Request(self.process.web_url + path, data=data, method=method,
                                         headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                status, raw = reply.status, reply.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def ok(self, method: str, path: str, body: Any = None, role: str = SUPERUSER) -> Any:
        status, reply = self.http(method, path, body, role=role)
        assert status < 300, (method, path, status, reply)
        return reply

    def tenant(self, admins: tuple[str, ...] = ()) -> str:
        """A fresh tenant with namespace <tenant>/ns, administered by admins."""
        name = f"t-{uuid.uuid4().hex[:10]}"
        self.ok("PUT", f"/admin/v2/tenants/{name}",
                {"adminRoles": list(admins), "allowedClusters": ["standalone"]})
        self.ok("PUT", f"/admin/v2/namespaces/{name}/ns")
        return name

    def raw_connect(self, method: str | None, data: bytes = b"",
                    original_principal: str | None = None,
                    supports_auth_refresh: bool = False) -> tuple[socket.socket, Any]:
        """CONNECT by hand with any method name; the socket and the broker's first reply."""
        sock = socket.create_connection(("127.0.0.1", self.process.broker_port), timeout=10)
        command = pb.BaseCommand(type=pb.BaseCommand.CONNECT)
        command.connect.client_version = "raw-test"
        command.connect.protocol_version = 20
        if method is not None:
            command.connect.auth_method_name = method
            command.connect.auth_data = data
        if original_principal is not None:
            command.connect.original_principal = original_principal
        command.connect.feature_flags.supports_auth_refresh = supports_auth_refresh
        sock.sendall(frame.encode_command(command))
        decoder = frame.FrameDecoder()
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed without a reply")
            frames = decoder.feed(chunk)
            if frames:
                return sock, frames[0].command

    def stored(self, topic: str) -> list[bytes]:
        """Every message on topic, read from the earliest by the superuser."""
        client = self.client(SUPERUSER)
        try:
            reader = client.create_reader(topic, pulsar.MessageId.earliest)
            found = []
            while reader.has_message_available():
                found.append(reader.read_next(10_000).data())
            return found
        finally:
            client.close()

    @staticmethod
    def closed(sock: socket.socket) -> bool:
        """Whether the broker closed sock (reads until end of stream or the timeout)."""
        try:
            while True:
                if sock.recv(65536) == b"":
                    return True
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    @staticmethod
    def basic_header(user: str, password: str) -> dict[str, str]:
        return {"Authorization": "Basic "
                + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture(scope="session")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("secured")
    secret = secrets.token_bytes(32)
    (root / "secret.key").write_bytes(secret)
    (root / "passwd").write_text(
        "bcuser:" + bcrypt.hashpw(b"bcpass", bcrypt.gensalt(4)).decode() + "\n"
        + "md5user:" + passlib_hash.apr_md5_crypt.hash("md5pass") + "\n")
    config = root / "standalone.conf"
    config.write_text("\n".join([
        "authenticationEnabled=true",
        f"authenticationProviders={PROVIDERS}",
        f"tokenSecretKey=file://{root / 'secret.key'}",
        f"basicAuthConf={root / 'passwd'}",
        "authorizationEnabled=true",
        f"superUserRoles={SUPERUSER},proxy",
        "proxyRoles=proxy",
        f"authenticationRefreshCheckSeconds={REFRESH_CHECK_S}",
        "journalSyncData=false",
    ]) + "\n")
    process = broker_testing.StandaloneProcess(root / "data")
    process.extra_arguments = ["--config", str(config), "--no-functions-worker"]
    process.start()
    try:
        yield Secured(process, secret)
    finally:
        process.stop()
