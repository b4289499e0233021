"""Broker to bookie over TLS: a bookie with BookKeeper's tls* keys requiring client
certificates, a broker with the bookkeeperTLS* keys, messages written to and read back from
the bookie through it."""

from __future__ import annotations

import asyncio
import pathlib
import uuid
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_bookie import errors as bookie_errors
from pulsar_bookie import types
from pulsar_bookie.net import client as bookie_net
from pulsar_broker import local_cluster
from pulsar_common import testing_certs

TLS_PROVIDER = "org.apache.bookkeeper.tls.TLSContextFactory"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            pki: testing_certs.Pki) -> Iterator[local_cluster.LocalCluster]:
    root: pathlib.Path = tmp_path_factory.mktemp("bookie-tls")
    bookie_cert = pki.ca.issue(root / "certs", "bookie", "bookie", ("127.0.0.1",))
    found = local_cluster.LocalCluster(
        root / "cluster", bookies=1, brokers=1, ensemble=1, write_quorum=1, ack_quorum=1,
        journal_sync=False, broker_overrides={
            "bookkeeperTLSProviderFactoryClass": TLS_PROVIDER,
            "bookkeeperTLSTrustCertsFilePath": str(pki.trust_file),
            "bookkeeperTLSClientAuthentication": "true",
            "bookkeeperTLSCertificateFilePath": str(pki.client.cert),
            "bookkeeperTLSKeyFilePath": str(pki.client.key)})
    found.bookies[0].settings.update({
        "tlsProviderFactoryClass": TLS_PROVIDER,
        "tlsCertificatePath": str(bookie_cert.cert), "tlsKeyStore": str(bookie_cert.key),
        "tlsTrustStore": str(pki.trust_file), "tlsClientAuthentication": "true"})
    found.start()
    yield found
    found.stop()


def test_messages_go_to_the_bookie_and_back_over_tls(
        cluster: local_cluster.LocalCluster) -> None:
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=30)
    topic = f"persistent://public/default/bookie-tls-{uuid.uuid4().hex[:6]}"
    try:
        producer = client.create_producer(topic)
        for i in range(20):
            producer.send(f"m{i}".encode())
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        got = [reader.read_next(timeout_millis=10_000).data() for _ in range(20)]
        assert got == [f"m{i}".encode() for i in range(20)]
    finally:
        client.close()


def test_a_plain_client_cannot_talk_to_the_tls_bookie(
        cluster: local_cluster.LocalCluster) -> None:
    async def read_lac() -> None:
        plain = bookie_net.BookieClient(types.BookieId(cluster.bookies[0].bookie_id),
                                        bookie_net.ClientSettings(connect_timeout_s=2,
                                                                  read_timeout_s=2))
        try:
            await plain.read_last_add_confirmed(types.LedgerId(1))
        finally:
            await plain.close()

    """The TLS listener drops what is not a TLS handshake."""
    with pytest.raises(bookie_errors.BookieUnavailableError, match="closed the connection"):
        asyncio.run(read_lac())
