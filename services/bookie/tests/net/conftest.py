"""Fixtures: a real storage engine on temporary directories, served by a real TCP server."""

from __future__ import annotations

import dataclasses
import pathlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from pulsar_bookie import config as bookie_config
from pulsar_bookie import types
from pulsar_bookie.net import client, server
from pulsar_bookie.storage import engine

KEY = b"master-key"


@dataclasses.dataclass
class Served:
    storage: engine.LedgerStorageEngine
    server: server.BookieServer
    client: client.BookieClient

    @property
    def bookie_id(self) -> types.BookieId:
        return self.client.bookie_id


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve(tmp_path: pathlib.Path) -> AsyncIterator[Serve]:
    """serve(server_settings=..., client_settings=..., **engine settings) -> Served."""
    started: list[Served] = []

    async def start(
        server_settings: server.ServerSettings | None = None,
        client_settings: client.ClientSettings | None = None,
        **overrides: object,
    ) -> Served:
        base = tmp_path / f"bookie{len(started)}"
        settings: dict[str, object] = {
            "journalDirectory": str(base / "journal"),
            "ledgerDirectories": (str(base / "ledgers"),),
            "dbStorage_writeCacheMaxSizeMb": 8,
            "journalSyncData": False,
            "flushInterval": 3600_000,
            "gcWaitTime": 3600_000,
        }
        settings.update(overrides)
        storage = engine.LedgerStorageEngine(bookie_config.BookieConfig(**settings))  # type: ignore[arg-type]
        await storage.start()
        bookie_server = server.BookieServer(storage, server_settings)
        await bookie_server.start("127.0.0.1", 0)
        bookie_client = client.BookieClient(
            types.BookieId(f"127.0.0.1:{bookie_server.port}"), client_settings
        )
        served = Served(storage, bookie_server, bookie_client)
        started.append(served)
        return served

    yield start
    for served in started:
        await served.client.close()
        await served.server.stop(grace_s=5)
        await served.storage.close()
