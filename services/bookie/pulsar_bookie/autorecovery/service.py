"""Autorecovery in one process: an auditor candidate and a replication worker.

Runs inside a bookie when autoRecoveryDaemonEnabled is set, or on its own as
`pulsar autorecovery` (pulsar_bookie.autorecovery.cli). Any number of them
may run: one is elected auditor, all of them replicate.
"""

from __future__ import annotations

import random
import ssl

from pulsar_common import errors as common_errors
from pulsar_common import tls
from pulsar_common.metadata import api as metadata_api

from pulsar_bookie import config as bookie_config
from pulsar_bookie.autorecovery import auditor, worker
from pulsar_bookie.net import client as bookie_net


def auditor_settings(conf: bookie_config.BookieConfig) -> auditor.AuditorSettings:
    return auditor.AuditorSettings(
        lost_bookie_recovery_delay_s=conf.lostBookieRecoveryDelay,
        periodic_check_interval_s=conf.auditorPeriodicCheckInterval,
        periodic_bookie_check_interval_s=conf.auditorPeriodicBookieCheckInterval,
    )


def worker_settings(conf: bookie_config.BookieConfig) -> worker.WorkerSettings:
    return worker.WorkerSettings(
        entry_batch=conf.rereplicationEntryBatchSize,
        open_ledger_grace_ms=conf.openLedgerRereplicationGracePeriod,
    )


def client_tls_context(conf: bookie_config.BookieConfig) -> ssl.SSLContext | None:
    """TLS towards the bookies when they speak it (tlsProviderFactoryClass): the bookies'
    certificates are checked against tlsTrustStore; with tlsClientAuthentication,
    tlsCertificatePath/tlsKeyStore are presented as the client certificate (it must then
    allow client authentication too)."""
    if not conf.tlsProviderFactoryClass:
        return None
    if conf.tlsKeyStoreType.upper() != "PEM" or conf.tlsTrustStoreType.upper() != "PEM":
        raise common_errors.ConfigError("only tlsKeyStoreType=PEM and tlsTrustStoreType=PEM "
                                        "are supported")
    mutual = conf.tlsClientAuthentication
    return tls.client_context(tls.TlsSettings(
        cert_file=conf.tlsCertificatePath if mutual else "",
        key_file=conf.tlsKeyStore if mutual else "",
        trust_certs_file=conf.tlsTrustStore))


class AutoRecoveryService:
    def __init__(
        self,
        store: metadata_api.MetadataStore,
        conf: bookie_config.BookieConfig,
        me: str,
        http_address: str = "",
        *,
        rng: random.Random | None = None,
    ) -> None:
        self.pool = bookie_net.BookieClientPool(
            bookie_net.ClientSettings(add_timeout_s=30, read_timeout_s=30),
            ssl_context=client_tls_context(conf))
        self.auditor = auditor.Auditor(store, self.pool, auditor.identity(me, http_address),
                                       auditor_settings(conf))
        self.worker = worker.ReplicationWorker(store, self.pool, me, worker_settings(conf),
                                               rng=rng)

    def start(self) -> None:
        self.auditor.start()
        self.worker.start()

    async def stop(self) -> None:
        await self.worker.stop()
        await self.auditor.stop()
        await self.pool.close()
