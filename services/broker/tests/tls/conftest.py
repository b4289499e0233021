"""Real certificates and TLS standalones for the broker's TLS tests."""

from __future__ import annotations

import pathlib
import shutil
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import testing_certs


@pytest.fixture(scope="package")
def pki(tmp_path_factory: pytest.TempPathFactory) -> testing_certs.Pki:
    """A CA, a server certificate for localhost only (no IP address: connecting to
    127.0.0.1 fails hostname verification) and a client certificate with CN admin."""
    return testing_certs.make_pki(tmp_path_factory.mktemp("pki"), hosts=("localhost",))


@pytest.fixture(scope="package")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> testing_certs.Authority:
    """A CA the brokers do not trust."""
    return testing_certs.authority(tmp_path_factory.mktemp("other-ca"), "other-ca")


@pytest.fixture(scope="package")
def tls_standalone(tmp_path_factory: pytest.TempPathFactory,
                   pki: testing_certs.Pki) -> Iterator[broker_testing.TlsStandaloneProcess]:
    """A standalone with plain and TLS ports, advertising localhost (its certificate's name)."""
    data_dir = tmp_path_factory.mktemp("tls-standalone") / "data"
    process = broker_testing.TlsStandaloneProcess(
        data_dir, testing_certs.broker_tls_settings(pki), {"journalSyncData": "false"},
        host="localhost")
    process.start()
    yield process
    process.stop()


def tls_client(service_url: str, trust_file: pathlib.Path | None, *,
               validate_hostname: bool = True, **kwargs: object) -> pulsar.Client:
    return pulsar.Client(service_url, operation_timeout_seconds=5,
                         tls_trust_certs_file_path=None if trust_file is None else str(trust_file),
                         tls_validate_hostname=validate_hostname,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error), **kwargs)


@pytest.fixture(scope="package")
def server_files(tmp_path_factory: pytest.TempPathFactory,
                 pki: testing_certs.Pki) -> testing_certs.CertFiles:
    """Copies of the server certificate the test may overwrite."""
    directory = tmp_path_factory.mktemp("server-files")
    files = testing_certs.CertFiles(directory / "server.cert.pem", directory / "server.key.pem")
    shutil.copy(pki.server.cert, files.cert)
    shutil.copy(pki.server.key, files.key)
    return files


@pytest.fixture(scope="package")
def strict_standalone(tmp_path_factory: pytest.TempPathFactory, pki: testing_certs.Pki,
                      server_files: testing_certs.CertFiles,
                      ) -> Iterator[broker_testing.TlsStandaloneProcess]:
    """Only TLS ports, trusted client certificates required, certificate files (server_files)
    checked for changes every second."""
    data_dir = tmp_path_factory.mktemp("tls-only") / "data"
    settings = {**testing_certs.broker_tls_settings(pki),
                "tlsCertificateFilePath": str(server_files.cert),
                "tlsKeyFilePath": str(server_files.key),
                "tlsRequireTrustedClientCertOnConnect": "true",
                "tlsCertRefreshCheckDurationSec": "1"}
    process = broker_testing.TlsStandaloneProcess(
        data_dir, settings, {"journalSyncData": "false"}, plain=False, host="localhost")
    process.start()
    yield process
    process.stop()
