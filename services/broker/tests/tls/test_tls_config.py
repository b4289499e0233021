"""The TLS keys of broker.conf: what turns ports on and off, and what is refused at start-up."""

from __future__ import annotations

import pathlib

import pytest
from pulsar_broker import config as broker_config
from pulsar_common import errors, testing_certs, tls


def _load(tmp_path: pathlib.Path, text: str) -> broker_config.BrokerConfig:
    path = tmp_path / "broker.conf"
    path.write_text(text)
    return broker_config.load(str(path))


def test_empty_plain_ports_turn_them_off_as_in_apache(
        tmp_path: pathlib.Path, pki: testing_certs.Pki) -> None:
    conf = _load(tmp_path, f"brokerServicePort=\nwebServicePort=\nbrokerServicePortTls=6651\n"
                           f"webServicePortTls=8443\ntlsCertificateFilePath={pki.server.cert}\n"
                           f"tlsKeyFilePath={pki.server.key}\n")
    assert conf.broker_service_port is None and conf.web_service_port is None
    urls = conf.service_urls()
    assert urls.broker_service_url == "pulsar+ssl://localhost:6651"
    assert urls.web_service_url == "https://localhost:8443"


def test_other_empty_values_keep_their_defaults(tmp_path: pathlib.Path) -> None:
    conf = _load(tmp_path, "brokerServicePortTls=\ntlsProtocols=\nclusterName=\n")
    assert conf.broker_service_port == 6650 and conf.broker_service_port_tls is None
    assert conf.cluster_name == "standalone" and not conf.tls_enabled


@pytest.mark.parametrize("text, complaint", [
    ("brokerServicePort=\n", "no binary-protocol port"),
    ("webServicePort=\n", "no HTTP port"),
    ("brokerServicePortTls=6651\n", "tlsCertificateFilePath and tlsKeyFilePath are required"),
    ("tlsProtocols=SSLv3\n", "unsupported protocol"),
    ("tlsCertRefreshCheckDurationSec=-1\n", "tlsCertRefreshCheckDurationSec"),
])
def test_settings_that_cannot_work_stop_start_up(tmp_path: pathlib.Path, text: str,
                                                  complaint: str) -> None:
    with pytest.raises(errors.ConfigError, match=complaint):
        _load(tmp_path, text)


def test_required_client_certificates_need_a_trust_file(
        tmp_path: pathlib.Path, pki: testing_certs.Pki) -> None:
    with pytest.raises(errors.ConfigError, match="needs tlsTrustCertsFilePath"):
        _load(tmp_path, f"brokerServicePortTls=6651\ntlsCertificateFilePath={pki.server.cert}\n"
                        f"tlsKeyFilePath={pki.server.key}\n"
                        "tlsRequireTrustedClientCertOnConnect=true\n")


def test_protocols_bound_the_versions_a_listener_accepts(pki: testing_certs.Pki) -> None:
    settings = tls.TlsSettings(cert_file=str(pki.server.cert), key_file=str(pki.server.key),
                               protocols=("TLSv1.3",))
    context = tls.server_context(settings)
    assert context.minimum_version == context.maximum_version == tls.PROTOCOLS["TLSv1.3"]


def test_a_half_written_certificate_keeps_the_old_one_until_it_loads(
        tmp_path: pathlib.Path, pki: testing_certs.Pki) -> None:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_bytes(pki.server.cert.read_bytes())
    key.write_bytes(pki.server.key.read_bytes())
    reloader = tls.CertificateReloader(tls.TlsSettings(cert_file=str(cert), key_file=str(key)),
                                       refresh_check_s=0)
    assert not reloader.check_now()
    cert.write_text("-----BEGIN CERTIFICATE-----\n")
    assert not reloader.check_now() and reloader.reloads == 0
    renewed = pki.ca.issue(tmp_path, "renewed", "localhost", ("localhost",))
    cert.write_bytes(renewed.cert.read_bytes())
    key.write_bytes(renewed.key.read_bytes())
    assert reloader.check_now() and reloader.reloads == 1
