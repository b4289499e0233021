"""Fixtures shared by every test folder: one real etcd and one real `pulsar standalone` for the
whole test session, and an official client on that standalone.

A test folder that needs a differently configured node overrides `standalone`; `client`
then connects to that node.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common.etcd_server import EtcdServer


@pytest.fixture(scope="session")
def etcd_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    """A real etcd process (loopback, free ports) shared by the session; stopped by pid."""
    server = EtcdServer(tmp_path_factory.mktemp("etcd"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def etcd_url(etcd_server: EtcdServer) -> str:
    """A metadata store URL on the session etcd, chrooted under a path unique to this test."""
    return f"{etcd_server.url}/tests/{uuid.uuid4().hex}"


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.StandaloneProcess]:
    """One standalone for the whole session; tests use their own topic names."""
    data_dir = tmp_path_factory.mktemp("standalone") / "data"
    process = broker_testing.StandaloneProcess(data_dir, {"journalSyncData": "false"})
    process.start()
    yield process
    process.stop()


@pytest.fixture
def client(standalone: broker_testing.StandaloneProcess) -> Iterator[pulsar.Client]:
    """An official `pulsar.Client` on the test's `standalone`."""
    c = pulsar.Client(standalone.service_url, operation_timeout_seconds=30,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield c
    c.close()


@pytest.fixture
def topic() -> str:
    """A fresh topic name in public/default."""
    return f"persistent://public/default/t-{uuid.uuid4().hex[:12]}"
