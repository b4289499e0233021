"""TLS authentication (AuthenticationProviderTls): the verified client certificate's common
name is the role, on `pulsar+ssl://` with the official client and on HTTPS."""

from __future__ import annotations

import pathlib
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import testing, testing_certs


class TlsBroker:
    def __init__(self, process: broker_testing.StandaloneProcess, pki: testing_certs.Pki,
                 outsider: testing_certs.CertFiles, tls_port: int, https_port: int) -> None:
        self.process, self.pki, self.outsider = process, pki, outsider
        self.tls_port, self.https_port = tls_port, https_port

    def client(self, cert: testing_certs.CertFiles) -> pulsar.Client:
        return pulsar.Client(f"pulsar+ssl://127.0.0.1:{self.tls_port}",
                             tls_trust_certs_file_path=str(self.pki.trust_file),
                             authentication=pulsar.AuthenticationTLS(str(cert.cert),
                                                                     str(cert.key)),
                             operation_timeout_seconds=10,
                             logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))

    def https_status(self, path: str, cert: testing_certs.CertFiles | None) -> int:
        context = ssl.create_default_context(cafile=str(self.pki.trust_file))
        if cert is not None:
            context.load_cert_chain(str(cert.cert), str(cert.key))
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{self.https_port}{path}",
                                        context=context, timeout=30) as reply:
                return int(reply.status)
        except urllib.error.HTTPError as exc:
            return exc.code


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsBroker]:
    root: pathlib.Path = tmp_path_factory.mktemp("tls-auth")
    pki = testing_certs.make_pki(root / "certs", client_role="admin")
    outsider = pki.ca.issue(root / "certs", "outsider", "outsider", client=True)
    tls_port, https_port = testing.free_port(), testing.free_port()
    process = broker_testing.StandaloneProcess(root / "data", {
        **testing_certs.broker_tls_settings(pki),
        "brokerServicePortTls": str(tls_port),
        "webServicePortTls": str(https_port),
        "authenticationEnabled": "true",
        "authenticationProviders":
            "org.apache.pulsar.broker.authentication.AuthenticationProviderTls",
        "authorizationEnabled": "true",
        "superUserRoles": "admin",
        "journalSyncData": "false",
    })
    process.extra_arguments = ["--no-functions-worker"]
    process.start()
    testing.wait_until(lambda: testing.port_open(https_port), 30, "the HTTPS port",
                       process.process)
    try:
        yield TlsBroker(process, pki, outsider, tls_port, https_port)
    finally:
        process.stop()


def test_certificate_common_name_is_the_role(broker: TlsBroker) -> None:
    topic = f"persistent://public/default/tls-{uuid.uuid4().hex[:8]}"
    admin = broker.client(broker.pki.client)
    try:
        consumer = admin.subscribe(topic, "s")
        admin.create_producer(topic).send(b"over tls")
        assert consumer.receive(10_000).data() == b"over tls"
    finally:
        admin.close()
    outsider = broker.client(broker.outsider)
    try:
        with pytest.raises(pulsar.AuthorizationError):
            outsider.create_producer(topic)
    finally:
        outsider.close()


def test_https_takes_the_role_from_the_client_certificate(broker: TlsBroker) -> None:
    assert broker.https_status("/admin/v2/tenants", broker.pki.client) == 200
    assert broker.https_status("/admin/v2/tenants", broker.outsider) == 403
    assert broker.https_status("/admin/v2/tenants", None) == 401
