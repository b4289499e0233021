"""Fixtures shared by every test folder: one real etcd for the whole test session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
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
