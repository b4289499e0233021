"""Standalones for the delayed-delivery tests: a 100 ms tick keeps them fast."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pulsar
import pytest

from pulsar_broker import testing as broker_testing

#: delayedDeliveryTickTimeMillis of the test standalones.
TICK_MS = 100


@pytest.fixture(scope="module")
def delayed_standalone(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[broker_testing.StandaloneProcess]:
    data_dir = tmp_path_factory.mktemp("delayed") / "data"
    process = broker_testing.StandaloneProcess(
        data_dir, {"journalSyncData": "false", "delayedDeliveryTickTimeMillis": str(TICK_MS)})
    process.start()
    yield process
    process.stop()


@pytest.fixture
def client(delayed_standalone: broker_testing.StandaloneProcess) -> Iterator[pulsar.Client]:
    c = pulsar.Client(delayed_standalone.service_url, operation_timeout_seconds=30,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield c
    c.close()


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/delayed-{uuid.uuid4().hex[:12]}"
