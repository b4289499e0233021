"""Shared fixtures: engines on temporary directories with small limits."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Callable

import pytest
from pulsar_bookie import config as bookie_config
from pulsar_bookie.storage import engine

KEY = b"master-key"

MakeConf = Callable[..., bookie_config.BookieConfig]


@pytest.fixture
def make_conf(tmp_path: pathlib.Path) -> MakeConf:
    def make(**overrides: object) -> bookie_config.BookieConfig:
        settings: dict[str, object] = {
            "journalDirectory": str(tmp_path / "journal"),
            "ledgerDirectories": (str(tmp_path / "ledgers"),),
            "dbStorage_writeCacheMaxSizeMb": 4,
            "flushInterval": 3600_000,
            "gcWaitTime": 3600_000,
        }
        settings.update(overrides)
        return bookie_config.BookieConfig(**settings)  # type: ignore[arg-type]

    return make


@pytest.fixture
async def bookie(make_conf: MakeConf) -> AsyncIterator[engine.LedgerStorageEngine]:
    storage = engine.LedgerStorageEngine(make_conf())
    await storage.start()
    yield storage
    await storage.close()


def freeze_as_crashed(tmp_path: pathlib.Path) -> pathlib.Path:
    """Copy the data directories as they are on disk now: what a crash at this moment leaves.

    Call while the engine still runs (after the adds of interest completed);
    then close the engine and `restore_crashed` the copy over the originals.
    """
    import shutil

    frozen = tmp_path.parent / (tmp_path.name + "-frozen")
    for name in ("journal", "ledgers"):
        shutil.copytree(tmp_path / name, frozen / name)
    return frozen


def restore_crashed(tmp_path: pathlib.Path, frozen: pathlib.Path) -> None:
    import shutil

    for name in ("journal", "ledgers"):
        shutil.rmtree(tmp_path / name)
        shutil.move(str(frozen / name), str(tmp_path / name))
    frozen.rmdir()


def journal_files(tmp_path: pathlib.Path) -> list[pathlib.Path]:
    return sorted((tmp_path / "journal" / "current").glob("*.txn"))
