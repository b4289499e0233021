"""Fixtures of the broker's tests: raw protocol connections to the session's standalone (the
`standalone`, `client` and `topic` fixtures come from the root conftest)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_broker.testing import RawConnection


@pytest.fixture
def raw_connection(standalone: broker_testing.StandaloneProcess) -> Iterator[
        Callable[..., RawConnection]]:
    """Opens RawConnections to the test's `standalone`; all are closed after the test."""
    opened: list[RawConnection] = []

    def open_one(**options: Any) -> RawConnection:
        opened.append(RawConnection(standalone.broker_port, **options))
        return opened[-1]

    yield open_one
    for connection in opened:
        connection.close()
