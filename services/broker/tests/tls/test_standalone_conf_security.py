"""`pulsar standalone --config standalone.conf` with Apache's own security settings: TLS
ports only, token + basic + TLS providers, authorization and superusers. The official
client over pulsar+ssl:// with each method, and pulsar-admin from a client.conf."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import uuid
from collections.abc import Iterator

import bcrypt
import jwt
import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import client_auth, testing_certs

SECRET = b"standalone-conf-secret-32-bytes!"
PROVIDERS = ",".join(f"org.apache.pulsar.broker.authentication.AuthenticationProvider{kind}"
                     for kind in ("Token", "Basic", "Tls"))


def _token(role: str) -> str:
    return jwt.encode({"sub": role}, SECRET, algorithm="HS256")


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory,
            pki: testing_certs.Pki) -> Iterator[broker_testing.TlsStandaloneProcess]:
    root = tmp_path_factory.mktemp("standalone-conf")
    (root / "secret.key").write_bytes(SECRET)
    hashed = bcrypt.hashpw(b"basic-pass", bcrypt.gensalt(rounds=4)).decode()
    (root / "htpasswd").write_text(f"basicuser:{hashed}\n")
    conf = root / "standalone.conf"
    # Written the way Apache's standalone.conf is: comments, empty plain ports, class names.
    conf.write_text(f"""\
### --- Apache Pulsar standalone.conf style --- ###
# Plain ports off: TLS only
brokerServicePort=
webServicePort=
tlsCertificateFilePath={pki.server.cert}
tlsKeyFilePath={pki.server.key}
tlsTrustCertsFilePath={pki.trust_file}
tlsAllowInsecureConnection=false
tlsProtocols=TLSv1.3,TLSv1.2

authenticationEnabled=true
authenticationProviders={PROVIDERS}
tokenSecretKey=file://{root / "secret.key"}
basicAuthConf={root / "htpasswd"}
authorizationEnabled=true
superUserRoles=admin
journalSyncData=false
""")
    process = broker_testing.TlsStandaloneProcess(root / "data", {}, plain=False,
                                                  host="localhost")
    # The file carries the settings; the helper only adds ports, addresses and data dirs.
    process.extra_arguments = ["--config", str(conf)]
    for key in ("brokerServicePort", "webServicePort", "journalSyncData"):
        process.overrides.pop(key, None)
    process.start()
    yield process
    process.stop()


def _client(process: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
            authentication: pulsar.Authentication | None) -> pulsar.Client:
    return pulsar.Client(process.service_url_tls, operation_timeout_seconds=5,
                         tls_trust_certs_file_path=str(pki.trust_file), tls_validate_hostname=True,
                         authentication=authentication,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


@pytest.mark.parametrize("method", ["token", "basic", "tls"])
def test_a_superuser_produces_and_consumes_with_each_method(
        secured: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
        method: str) -> None:
    authentication = {
        "token": pulsar.AuthenticationToken(_token("admin")),
        "basic": None,  # basicuser has no rights yet: granted below, then used
        "tls": pulsar.AuthenticationTLS(str(pki.client.cert), str(pki.client.key)),  # CN admin
    }[method]
    if method == "basic":
        admin = _admin(secured, pki, "--auth-plugin", client_auth.TOKEN_PLUGIN,
                       "--auth-params", f"token:{_token('admin')}", "namespaces",
                       "grant-permission", "public/default", "--role", "basicuser",
                       "--actions", "produce,consume")
        assert admin.returncode == 0, admin.stderr
        authentication = pulsar.AuthenticationBasic("basicuser", "basic-pass")
    client = _client(secured, pki, authentication)
    topic = f"persistent://public/default/conf-{method}-{uuid.uuid4().hex[:6]}"
    try:
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(method.encode())
        assert consumer.receive(timeout_millis=10_000).data() == method.encode()
    finally:
        client.close()


def test_no_credentials_and_the_wrong_password_are_refused(
        secured: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    for authentication in (None, pulsar.AuthenticationBasic("basicuser", "wrong")):
        client = _client(secured, pki, authentication)
        try:
            with pytest.raises(pulsar.PulsarException):
                client.create_producer(f"persistent://public/default/{uuid.uuid4().hex}")
        finally:
            client.close()


def _admin(process: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
           *args: str, conf: pathlib.Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PULSAR_CLIENT_CONF",
                                                            "PULSAR_ADMIN_URL")}
    if conf is not None:
        env["PULSAR_CLIENT_CONF"] = str(conf)
        flags: tuple[str, ...] = ()
    else:
        flags = ("--admin-url", process.web_url_tls, "--tls-trust-cert-path", str(pki.trust_file))
    return subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main", *flags, *args],
                          capture_output=True, text=True, timeout=90, check=False, env=env)


def test_pulsar_admin_reads_url_trust_and_token_from_client_conf(
        secured: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
        tmp_path: pathlib.Path) -> None:
    token_file = tmp_path / "admin.token"
    token_file.write_text(_token("admin"))
    conf = tmp_path / "client.conf"
    conf.write_text(f"webServiceUrl={secured.web_url_tls}\n"
                    f"authPlugin={client_auth.TOKEN_PLUGIN}\nauthParams=file://{token_file}\n"
                    f"tlsTrustCertsFilePath={pki.trust_file}\n")
    listed = _admin(secured, pki, "tenants", "list", conf=conf)
    assert listed.returncode == 0, listed.stderr
    assert "public" in listed.stdout.split()
    refused = _admin(secured, pki, "tenants", "list")  # same URL and trust, no token
    assert refused.returncode == 1
