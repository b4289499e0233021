"""Fixtures shared by the broker's tests: a real `pulsar standalone` process."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

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
def topic() -> str:
    """A fresh topic name in public/default."""
    return f"persistent://public/default/t-{uuid.uuid4().hex[:12]}"
