"""Broker to etcd over TLS: a real etcd serving https:// and requiring client certificates
(--client-cert-auth), reached through Apache's metadataStoreConfigPath file."""

from __future__ import annotations

import asyncio
import pathlib
import uuid
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import errors, testing_certs
from pulsar_common.etcd_server import EtcdServer, EtcdServerTls
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors
from pulsar_common.metadata import etcd_tls
from pulsar_common.metadata import factory as md_factory


@pytest.fixture(scope="module")
def etcd_certs(tmp_path_factory: pytest.TempPathFactory,
               pki: testing_certs.Pki) -> testing_certs.CertFiles:
    return pki.ca.issue(tmp_path_factory.mktemp("etcd-certs"), "etcd", "etcd",
                        ("127.0.0.1", "localhost"))


@pytest.fixture(scope="module")
def tls_etcd(tmp_path_factory: pytest.TempPathFactory, pki: testing_certs.Pki,
             etcd_certs: testing_certs.CertFiles) -> Iterator[EtcdServer]:
    server = EtcdServer(tmp_path_factory.mktemp("tls-etcd"), tls=EtcdServerTls(
        str(etcd_certs.cert), str(etcd_certs.key), str(pki.trust_file), client_cert_auth=True,
        client_cert=str(pki.client.cert), client_key=str(pki.client.key)))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def store_config(tmp_path_factory: pytest.TempPathFactory, pki: testing_certs.Pki) -> pathlib.Path:
    """Apache's metadataStoreConfigPath file, YAML-style lines."""
    path = tmp_path_factory.mktemp("store-config") / "etcd.yaml"
    path.write_text(f"useTls: true\ntlsTrustCertsFilePath: {pki.trust_file}\n"
                    f"tlsCertificateFilePath: {pki.client.cert}\ntlsKeyFilePath: {pki.client.key}\n")
    return path


async def _round_trip(url: str, tls: etcd_tls.EtcdTls | None) -> bytes | None:
    store = await md_factory.create_store(url, tls=tls, session_timeout_s=5)
    try:
        await store.put("/tls-check", b"over tls", md.VERSION_ABSENT)
        found = await store.get("/tls-check")
        return None if found is None else found.value
    finally:
        await store.close()


def test_the_metadata_store_reaches_etcd_over_tls_with_a_client_certificate(
        tls_etcd: EtcdServer, store_config: pathlib.Path) -> None:
    tls = etcd_tls.read_config(str(store_config))
    assert tls is not None
    url = f"{tls_etcd.url}/chroot-{uuid.uuid4().hex[:6]}"
    assert url.startswith("etcd:https://")
    assert asyncio.run(_round_trip(url, tls)) == b"over tls"


def test_without_a_client_certificate_etcd_refuses_the_store(
        tls_etcd: EtcdServer, pki: testing_certs.Pki) -> None:
    with pytest.raises(md_errors.StoreUnavailableError):
        asyncio.run(_round_trip(tls_etcd.url, etcd_tls.EtcdTls(str(pki.trust_file))))


def test_use_tls_false_means_no_tls_settings(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text("useTls: false\ntlsTrustCertsFilePath: /x\n")
    assert etcd_tls.read_config(str(path)) is None
    assert etcd_tls.read_config("") is None
    with pytest.raises(errors.ConfigError):
        etcd_tls.read_config(str(tmp_path / "missing.yaml"))


def test_a_standalone_keeps_its_metadata_in_etcd_over_tls(
        tls_etcd: EtcdServer, store_config: pathlib.Path,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """...and a proxy finds it through its registration there, over TLS too."""
    root = tmp_path_factory.mktemp("etcd-tls-standalone")
    store = {"metadataStoreUrl": f"{tls_etcd.url}/standalone-{uuid.uuid4().hex[:6]}",
             "metadataStoreConfigPath": str(store_config)}
    process = broker_testing.StandaloneProcess(root / "data", {"journalSyncData": "false",
                                                               **store})
    process.start()
    proxy = None
    try:
        proxy = broker_testing.ProxyProcess(root / "proxy", store).start()
        for url in (process.service_url, proxy.service_url):
            client = pulsar.Client(url, operation_timeout_seconds=15)
            try:
                topic = f"persistent://public/default/etcd-tls-{uuid.uuid4().hex[:6]}"
                consumer = client.subscribe(topic, "s")
                client.create_producer(topic).send(b"metadata over tls")
                assert consumer.receive(timeout_millis=10_000).data() == b"metadata over tls"
            finally:
                client.close()
    finally:
        if proxy is not None:
            proxy.stop()
        process.stop()
