"""A real etcd (the Debian binary) for the ownership tests, one per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pulsar_common.etcd_server import EtcdServer


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EtcdServer]:
    server = EtcdServer(tmp_path_factory.mktemp("etcd") / "data")
    server.start()
    yield server
    server.stop()
