"""pulsar-admin, pulsar-client and pulsar-perf over TLS: Apache's trust and auth flags, and
Apache's client.conf (PULSAR_CLIENT_CONF) instead of flags."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import uuid

from pulsar_broker import testing as broker_testing
from pulsar_common import client_auth, testing_certs

CLI_TIMEOUT_S = 90.0


def _run(module: str, *args: str, env: dict[str, str] | None = None,
         cwd: pathlib.Path | None = None) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("PULSAR_CLIENT_CONF", "PULSAR_ADMIN_URL")}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          timeout=CLI_TIMEOUT_S, check=False, env={**environment, **(env or {})},
                          cwd=cwd)


def _admin(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return _run("pulsar_client_tools.admin.main", *args, **kwargs)  # type: ignore[arg-type]


def _client(*args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return _run("pulsar_client_tools.client.main", *args, **kwargs)  # type: ignore[arg-type]


def _tls_auth_params(pki: testing_certs.Pki) -> str:
    return f"tlsCertFile:{pki.client.cert},tlsKeyFile:{pki.client.key}"


def test_pulsar_admin_over_https_trusts_the_given_ca_only(
        tls_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    url = tls_standalone.web_url_tls
    trusted = _admin("--admin-url", url, "--tls-trust-cert-path", str(pki.trust_file),
                     "clusters", "list")
    assert trusted.returncode == 0, trusted.stderr
    assert "standalone" in trusted.stdout.split()
    untrusted = _admin("--admin-url", url, "clusters", "list")
    assert untrusted.returncode == 1
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr + untrusted.stdout


def test_pulsar_admin_allow_insecure_skips_the_certificate_check(
        tls_standalone: broker_testing.TlsStandaloneProcess) -> None:
    done = _admin("--admin-url", tls_standalone.web_url_tls, "--tls-allow-insecure",
                  "tenants", "list")
    assert done.returncode == 0, done.stderr
    assert "public" in done.stdout.split()


def test_pulsar_admin_with_a_client_certificate_passes_a_broker_that_requires_one(
        strict_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    common = ("--admin-url", strict_standalone.web_url_tls,
              "--tls-trust-cert-path", str(pki.trust_file))
    with_cert = _admin(*common, "--auth-plugin", client_auth.TLS_PLUGIN,
                       "--auth-params", _tls_auth_params(pki), "tenants", "list")
    assert with_cert.returncode == 0, with_cert.stderr
    assert "public" in with_cert.stdout.split()
    without = _admin(*common, "tenants", "list")
    assert without.returncode == 1


def test_pulsar_client_produces_and_consumes_over_pulsar_ssl(
        strict_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    topic = f"persistent://public/default/cli-{uuid.uuid4().hex[:8]}"
    flags = ("--url", strict_standalone.service_url_tls,
             "--tls-trust-cert-path", str(pki.trust_file), "--tls-enable-hostname-verification",
             "--auth-plugin", client_auth.TLS_PLUGIN, "--auth-params", _tls_auth_params(pki))
    produced = _client(*flags, "produce", topic, "-m", "over-tls", "-n", "3")
    assert produced.returncode == 0, produced.stderr
    consumed = _client(*flags, "consume", topic, "-s", "s", "-p", "Earliest", "-n", "3")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.count("over-tls") == 3


def test_client_conf_gives_urls_trust_and_credentials(
        strict_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
        tmp_path: pathlib.Path) -> None:
    conf = tmp_path / "client.conf"
    conf.write_text(
        f"webServiceUrl={strict_standalone.web_url_tls}\n"
        f"brokerServiceUrl={strict_standalone.service_url_tls}\n"
        f"authPlugin={client_auth.TLS_PLUGIN}\n"
        f"authParams={_tls_auth_params(pki)}\n"
        f"tlsTrustCertsFilePath={pki.trust_file}\n"
        "tlsAllowInsecureConnection=false\ntlsEnableHostnameVerification=true\n")
    env = {"PULSAR_CLIENT_CONF": str(conf)}
    listed = _admin("namespaces", "list", "public", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "public/default" in listed.stdout.split()
    topic = f"persistent://public/default/conf-{uuid.uuid4().hex[:8]}"
    produced = _client("produce", topic, "-m", "from-conf", env=env)
    assert produced.returncode == 0, produced.stderr
    perf = _run("pulsar_client_tools.perf.main", "produce", topic, "-m", "20", "-r", "0",
                env=env)
    assert perf.returncode == 0, perf.stderr


def test_conf_client_conf_in_the_working_directory_is_read(
        tls_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
        tmp_path: pathlib.Path) -> None:
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "client.conf").write_text(
        f"webServiceUrl={tls_standalone.web_url_tls}\ntlsTrustCertsFilePath={pki.trust_file}\n")
    done = _admin("clusters", "list", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "standalone" in done.stdout.split()


def test_pulsar_perf_takes_apaches_trust_cert_file_flag(
        tls_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    topic = f"persistent://public/default/perf-{uuid.uuid4().hex[:8]}"
    done = _run("pulsar_client_tools.perf.main", "produce", topic, "-u", tls_standalone.service_url_tls,
                "--trust-cert-file", str(pki.trust_file), "-m", "50")
    assert done.returncode == 0, done.stderr


def test_an_unknown_auth_plugin_is_a_clear_error(
        tls_standalone: broker_testing.TlsStandaloneProcess) -> None:
    done = _admin("--admin-url", tls_standalone.web_url, "--auth-plugin", "com.example.Nope",
                  "tenants", "list")
    assert done.returncode == 1
    assert "unsupported authPlugin 'com.example.Nope'" in done.stderr + done.stdout
