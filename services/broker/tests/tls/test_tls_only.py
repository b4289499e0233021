"""A broker with only TLS ports that requires trusted client certificates
(tlsRequireTrustedClientCertOnConnect), and reloads its certificate when the files change."""

from __future__ import annotations

import pathlib
import shutil
import socket
import ssl
import uuid

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import testing, testing_certs

from .conftest import tls_client


def test_plain_ports_are_off(strict_standalone: broker_testing.TlsStandaloneProcess) -> None:
    assert not testing.port_open(strict_standalone.broker_port)
    assert not testing.port_open(strict_standalone.web_port)


def test_a_client_without_a_certificate_is_refused(
        strict_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    client = tls_client(strict_standalone.service_url_tls, pki.trust_file)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(f"persistent://public/default/{uuid.uuid4().hex}")
    finally:
        client.close()


def test_a_client_certificate_from_another_ca_is_refused(
        strict_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
        other_ca: testing_certs.Authority, tmp_path: pathlib.Path) -> None:
    stranger = other_ca.issue(tmp_path, "stranger", "admin", client=True)
    client = tls_client(strict_standalone.service_url_tls, pki.trust_file,
                        authentication=pulsar.AuthenticationTLS(str(stranger.cert),
                                                                str(stranger.key)))
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(f"persistent://public/default/{uuid.uuid4().hex}")
    finally:
        client.close()


def test_a_client_with_a_trusted_certificate_produces_and_consumes(
        strict_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    client = tls_client(strict_standalone.service_url_tls, pki.trust_file,
                        authentication=pulsar.AuthenticationTLS(str(pki.client.cert),
                                                                str(pki.client.key)))
    topic = f"persistent://public/default/{uuid.uuid4().hex}"
    try:
        consumer = client.subscribe(topic, "s")
        client.create_producer(topic).send(b"over mutual TLS")
        assert consumer.receive(timeout_millis=10_000).data() == b"over mutual TLS"
    finally:
        client.close()


def _served_certificate(port: int, pki: testing_certs.Pki) -> bytes:
    context = ssl.create_default_context(cafile=str(pki.trust_file))
    context.load_cert_chain(pki.client.cert, pki.client.key)
    with (socket.create_connection(("localhost", port), timeout=5) as raw,
          context.wrap_socket(raw, server_hostname="localhost") as tls_socket):
        served = tls_socket.getpeercert(binary_form=True)
    assert served is not None
    return served


def test_new_connections_get_the_new_certificate_once_the_files_change(
        strict_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki,
        server_files: testing_certs.CertFiles, tmp_path: pathlib.Path) -> None:
    before = _served_certificate(strict_standalone.broker_port_tls, pki)
    renewed = pki.ca.issue(tmp_path, "renewed", "localhost", ("localhost",))
    # Key first: a reload between the two writes fails to load and is retried.
    shutil.copy(renewed.key, server_files.key)
    shutil.copy(renewed.cert, server_files.cert)
    expected = ssl.PEM_cert_to_DER_cert(renewed.cert.read_text())
    assert before != expected
    for port in (strict_standalone.broker_port_tls, strict_standalone.web_port_tls):
        testing.wait_until(lambda p=port: _served_certificate(p, pki) == expected, 15,  # type: ignore[misc]
                           "the renewed certificate served")
