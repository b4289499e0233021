"""Fixtures shared by the broker's tests: a real `pulsar standalone` process and an official
client on it.

A test folder that needs a differently configured node overrides `standalone`; `client`
then connects to that node.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pulsar
import pytest
from pulsar_broker import testing as broker_testing


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
