"""Autorecovery between bookies that speak TLS (tlsProviderFactoryClass): the workers reach
them with the bookies' own TLS settings."""

from __future__ import annotations

import asyncio
import pathlib
import random
from collections.abc import AsyncIterator

import pytest
from pulsar_bookie.client.replicated import client as replicated
from pulsar_bookie.net import client as bookie_net
from pulsar_common import testing_certs, tls
from pulsar_common.metadata import api as metadata_api

from .conftest import (
    Cluster,
    RegisteredBookies,
    assert_fully_replicated,
    eventually,
    references,
    write_closed_ledgers,
)
from .test_recovery import RECOVERY, no_marks

pytestmark = pytest.mark.slow


@pytest.fixture
def pki(tmp_path: pathlib.Path) -> testing_certs.Pki:
    return testing_certs.make_pki(tmp_path / "pki")


@pytest.fixture
async def tls_pool(pki: testing_certs.Pki) -> AsyncIterator[bookie_net.BookieClientPool]:
    opened = bookie_net.BookieClientPool(
        bookie_net.ClientSettings(read_timeout_s=10),
        ssl_context=tls.client_context(tls.TlsSettings(trust_certs_file=str(pki.trust_file))))
    yield opened
    await opened.close()


async def test_a_lost_bookie_is_re_replicated_over_tls(
    cluster: Cluster, store: metadata_api.MetadataStore, pki: testing_certs.Pki,
    tls_pool: bookie_net.BookieClientPool,
) -> None:
    settings = {"tlsProviderFactoryClass": "org.apache.bookkeeper.tls.TLSContextFactory",
                "tlsCertificatePath": str(pki.server.cert), "tlsKeyStore": str(pki.server.key),
                "tlsTrustStore": str(pki.trust_file)}
    await asyncio.to_thread(cluster.start_bookies, 4, settings)
    await asyncio.to_thread(cluster.start_autorecovery, {**RECOVERY, **settings})
    ledgers = replicated.ReplicatedLedgerClient(store, tls_pool, RegisteredBookies(store),
                                                rng=random.Random(3))
    [ledger_id] = await write_closed_ledgers(ledgers, count=1, entries=100)
    victim = (await ledgers.get_ledger_metadata(ledger_id)).ensembles[0].ensemble[0]
    cluster.lose(victim)

    async def gone() -> bool:
        return not await references(store, victim)

    await eventually(gone, 60, f"no ledger on {victim}")
    await eventually(lambda: no_marks(store), 30, "no under-replicated ledger left")
    live = {b.bookie_id for b in cluster.bookies} - {victim}
    assert await assert_fully_replicated(store, tls_pool, live) == 100 * 2
