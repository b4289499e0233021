"""The broker's TLS ports with the official client and HTTPS: trusted and untrusted CAs,
hostname verification, lookups that answer TLS URLs."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
import uuid
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import testing_certs

from .conftest import tls_client


def _topic() -> str:
    return f"persistent://public/default/tls-{uuid.uuid4().hex[:12]}"


def _round_trip(client: pulsar.Client, count: int = 10) -> list[bytes]:
    topic = _topic()
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for i in range(count):
        producer.send(f"m{i}".encode())
    received = []
    for _ in range(count):
        msg = consumer.receive(timeout_millis=10_000)
        consumer.acknowledge(msg)
        received.append(msg.data())
    return received


def _https_json(url: str, context: ssl.SSLContext) -> Any:
    with urllib.request.urlopen(url, timeout=10, context=context) as reply:
        return json.loads(reply.read())


def test_produce_and_consume_over_pulsar_ssl_with_a_trusted_ca_and_hostname_verification(
        tls_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    client = tls_client(tls_standalone.service_url_tls, pki.trust_file)
    try:
        assert _round_trip(client) == [f"m{i}".encode() for i in range(10)]
    finally:
        client.close()


def test_a_name_outside_the_certificate_is_refused_with_hostname_verification_only(
        tls_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    """The certificate names localhost; 127.0.0.1 passes only when hostname checks are off."""
    url = f"pulsar+ssl://127.0.0.1:{tls_standalone.broker_port_tls}"
    checked = tls_client(url, pki.trust_file, validate_hostname=True)
    try:
        with pytest.raises(pulsar.PulsarException):
            checked.create_producer(_topic())
    finally:
        checked.close()
    unchecked = tls_client(url, pki.trust_file, validate_hostname=False)
    try:
        assert _round_trip(unchecked, 3) == [b"m0", b"m1", b"m2"]
    finally:
        unchecked.close()


def test_a_client_trusting_another_ca_is_refused(
        tls_standalone: broker_testing.TlsStandaloneProcess,
        other_ca: testing_certs.Authority) -> None:
    client = tls_client(tls_standalone.service_url_tls, other_ca.cert_file)
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(_topic())
    finally:
        client.close()


def test_the_plain_port_keeps_working_next_to_the_tls_port(
        tls_standalone: broker_testing.TlsStandaloneProcess) -> None:
    client = pulsar.Client(tls_standalone.service_url, operation_timeout_seconds=10)
    try:
        assert _round_trip(client, 2) == [b"m0", b"m1"]
    finally:
        client.close()


def test_https_admin_and_lookup_answer_the_tls_urls(
        tls_standalone: broker_testing.TlsStandaloneProcess, pki: testing_certs.Pki) -> None:
    context = ssl.create_default_context(cafile=str(pki.trust_file))
    web = tls_standalone.web_url_tls
    assert "standalone" in _https_json(f"{web}/admin/v2/clusters", context)
    cluster = _https_json(f"{web}/admin/v2/clusters/standalone", context)
    assert cluster["brokerServiceUrlTls"] == tls_standalone.service_url_tls
    assert cluster["serviceUrlTls"] == web
    topic = _topic().removeprefix("persistent://")
    lookup = _https_json(f"{web}/lookup/v2/topic/persistent/{topic}", context)
    assert lookup["brokerUrlTls"] == tls_standalone.service_url_tls
    assert lookup["httpUrlTls"] == web
    assert lookup["brokerUrl"] == f"pulsar://localhost:{tls_standalone.broker_port}"


def test_https_refuses_a_client_that_does_not_trust_the_broker(
        tls_standalone: broker_testing.TlsStandaloneProcess,
        other_ca: testing_certs.Authority) -> None:
    context = ssl.create_default_context(cafile=str(other_ca.cert_file))
    with pytest.raises(urllib.error.URLError) as failure:
        _https_json(f"{tls_standalone.web_url_tls}/admin/v2/clusters", context)
    assert isinstance(failure.value.reason, ssl.SSLCertVerificationError)
