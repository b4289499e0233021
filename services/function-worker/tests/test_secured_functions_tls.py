"""Functions on a standalone that serves TLS only: the embedded worker's instances connect
over `pulsar+ssl://`, trusting the broker by its tlsTrustCertsFilePath and authenticating with
the broker's client token; a client that authenticates to the broker by its certificate
manages functions through the broker, which names it to the worker in X-Original-Principal
(the broker's role is one of proxyRoles). An instance started as the operator starts one of a
Function resource reads its token and TLS trust from function-mesh's authSecret/tlsSecret
files (mounted Secrets), not from its command line."""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import testing_certs
from pulsar_common.auth import token as auth_token
from pulsar_functions import testing
from pulsar_functions.testing import multipart, receive_all, wait_for

pytestmark = pytest.mark.slow

SUPERUSER = "admin"
BROKER_ROLE = "broker"
PROVIDERS = ",".join(f"org.apache.pulsar.broker.authentication.{name}"
                     for name in ("AuthenticationProviderTls", "AuthenticationProviderToken"))

EXCLAIM = b"""
def exclaim(input):
    return input + "!"
"""


class TlsCluster:
    def __init__(self, process: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
                 author: testing_certs.CertFiles, secret: bytes) -> None:
        self.process, self.pki, self.author, self.secret = process, pki, author, secret

    def https(self, method: str, path: str, body: bytes | None = None,
              content_type: str | None = None,
              cert: testing_certs.CertFiles | None = None) -> tuple[int, bytes]:
        context = ssl.create_default_context(cafile=str(self.pki.trust_file))
        if cert is not None:
            context.load_cert_chain(str(cert.cert), str(cert.key))
        headers = {"Content-Type": content_type} if content_type else {}
        request = urllib.request.Request(self.process.web_url_tls + path, data=body,
                                         method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, context=context, timeout=60) as reply:
                return int(reply.status), bytes(reply.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), bytes(exc.read())

    def admin(self, method: str, path: str, document: object = None) -> None:
        body = None if document is None else json.dumps(document).encode()
        status, reply = self.https(method, path, body, "application/json" if body else None,
                                   self.pki.client)
        assert status < 300, (method, path, status, reply)

    def client(self) -> pulsar.Client:
        return pulsar.Client(self.process.service_url_tls,
                             tls_trust_certs_file_path=str(self.pki.trust_file),
                             authentication=pulsar.AuthenticationTLS(str(self.pki.client.cert),
                                                                     str(self.pki.client.key)),
                             operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsCluster]:
    root: pathlib.Path = tmp_path_factory.mktemp("tls-functions")
    pki = testing_certs.make_pki(root / "certs", client_role=SUPERUSER)
    author = pki.ca.issue(root / "certs", "author", "author", client=True)
    secret = secrets.token_bytes(32)
    (root / "secret.key").write_bytes(secret)
    (root / "broker.token").write_text(auth_token.create(secret, BROKER_ROLE))
    process = broker_testing.TlsStandaloneProcess(root / "data", testing_certs.broker_tls_settings(
        pki), {
        "authenticationEnabled": "true", "authenticationProviders": PROVIDERS,
        "tokenSecretKey": f"file://{root / 'secret.key'}",
        "authorizationEnabled": "true", "superUserRoles": f"{SUPERUSER},{BROKER_ROLE}",
        "proxyRoles": BROKER_ROLE,
        "brokerClientAuthenticationPlugin":
            "org.apache.pulsar.client.impl.auth.AuthenticationToken",
        "brokerClientAuthenticationParameters": f"file://{root / 'broker.token'}",
        "journalSyncData": "false",
    }, plain=False)
    process.start()
    found = TlsCluster(process, pki, author, secret)
    try:
        wait_for(lambda: found.https("GET", "/admin/v3/functions/public/default",
                                     cert=pki.client)[0] == 200, 60, "the worker registered")
        yield found
    finally:
        process.stop()


def test_a_certificate_client_runs_a_function_over_tls(cluster: TlsCluster) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    cluster.admin("PUT", f"/admin/v2/tenants/{tenant}",
                  {"adminRoles": [], "allowedClusters": ["standalone"]})
    cluster.admin("PUT", f"/admin/v2/namespaces/{tenant}/ns")
    cluster.admin("POST", f"/admin/v2/namespaces/{tenant}/ns/permissions/author", ["functions"])
    source, sink = f"persistent://{tenant}/ns/in", f"persistent://{tenant}/ns/out"
    base = f"/admin/v3/functions/{tenant}/ns/exclaim"
    form = multipart({"functionConfig": (None, json.dumps({
        "className": "exclaim.exclaim", "inputs": [source], "output": sink}).encode()),
        "data": ("exclaim.py", EXCLAIM)})
    outsider = cluster.pki.ca.issue(cluster.process.data_dir.parent / "certs", "outsider",
                                    "outsider", client=True)
    assert cluster.https("POST", base, *form, cert=outsider)[0] == 403
    assert cluster.https("GET", base, cert=cluster.author)[0] == 404
    status, reply = cluster.https("POST", base, *form, cert=cluster.author)
    assert status == 204, reply

    def running() -> bool:
        status, reply = cluster.https("GET", f"{base}/status", cert=cluster.author)
        return status == 200 and json.loads(reply)["numRunning"] == 1

    wait_for(running, 60, "the instance runs over pulsar+ssl://")
    client = cluster.client()
    try:
        out = client.subscribe(sink, "check")
        client.create_producer(source).send(b"secure")
        assert [m.data() for m in receive_all(out, 1)] == [b"secure!"]
    finally:
        client.close()
    assert cluster.https("DELETE", base, cert=cluster.author)[0] == 204


def test_an_instance_connects_with_function_mesh_s_mounted_auth_and_tls_secrets(
        cluster: TlsCluster, tmp_path: pathlib.Path) -> None:
    tenant = f"t-{uuid.uuid4().hex[:8]}"
    cluster.admin("PUT", f"/admin/v2/tenants/{tenant}",
                  {"adminRoles": [], "allowedClusters": ["standalone"]})
    cluster.admin("PUT", f"/admin/v2/namespaces/{tenant}/ns")
    cluster.admin("POST", f"/admin/v2/namespaces/{tenant}/ns/permissions/fn-runner",
                  ["produce", "consume"])
    token = auth_token.create(cluster.secret, "fn-runner")
    auth, tls = tmp_path / "client-auth", tmp_path / "client-tls"
    for directory, files in ((auth, {
            "clientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "clientAuthenticationParameters": f"token:{token}"}),
            (tls, {"tlsTrustCertsFilePath": str(cluster.pki.trust_file),
                   "tlsAllowInsecureConnection": "false"})):
        directory.mkdir()
        for key, value in files.items():
            (directory / key).write_text(value + "\n")
    (tmp_path / "exclaim.py").write_bytes(EXCLAIM)
    source, sink = f"persistent://{tenant}/ns/in", f"persistent://{tenant}/ns/out"
    instance = testing.InstanceProcess(tmp_path / "instance", {
        "tenant": tenant, "namespace": "ns", "name": "mounted", "className": "exclaim.exclaim",
        "py": str(tmp_path / "exclaim.py"), "inputs": [source], "output": sink,
        "brokerServiceUrl": cluster.process.service_url_tls},
        extra_arguments=["--client-auth-dir", str(auth), "--client-tls-dir", str(tls)])
    instance.start()
    try:
        assert instance.process is not None
        command_line = pathlib.Path(f"/proc/{instance.process.pid}/cmdline").read_bytes()
        assert token.encode() not in command_line
        assert all(token not in value for value in os.environ.values())
        client = cluster.client()
        try:
            out = client.subscribe(sink, "check")
            client.create_producer(source).send(b"mounted")
            assert [m.data() for m in receive_all(out, 1)] == [b"mounted!"]
        finally:
            client.close()
    finally:
        instance.stop()
