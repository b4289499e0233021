"""An official `pulsar.Client` connected to the session's standalone."""

from __future__ import annotations

from collections.abc import Iterator

import pulsar
import pytest

from pulsar_broker import testing as broker_testing


@pytest.fixture
def client(standalone: broker_testing.StandaloneProcess) -> Iterator[pulsar.Client]:
    c = pulsar.Client(standalone.service_url, operation_timeout_seconds=30,
                      logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    yield c
    c.close()
