"""Bookie settings read from a bookkeeper.conf-style file with BookKeeper's key names."""

from __future__ import annotations

import pathlib

import pytest
from pulsar_bookie import config as bookie_config
from pulsar_common import config, errors


def test_settings_load_from_bookkeeper_conf_keys(tmp_path: pathlib.Path) -> None:
    conf_file = tmp_path / "bookkeeper.conf"
    conf_file.write_text(
        "# a bookkeeper.conf excerpt\n"
        "bookiePort=3182\n"
        "journalDirectories=/data/j1,/data/j2\n"
        "ledgerDirectories=/data/l1\n"
        "journalSyncData=false\n"
        "journalMaxGroupWaitMSec=2\n"
        "dbStorage_writeCacheMaxSizeMb=128\n"
        "minorCompactionThreshold=0.3\n"
        "someSettingWeDoNotImplement=1\n"
    )
    conf = config.load(bookie_config.BookieConfig, conf_file, {"flushInterval": "1000"})
    assert conf.bookiePort == 3182
    assert conf.journal_dirs == ("/data/j1", "/data/j2")
    assert conf.ledgerDirectories == ("/data/l1",)
    assert conf.journalSyncData is False
    assert conf.journalMaxGroupWaitMSec == 2
    assert conf.write_cache_max_bytes == 128 * 1024 * 1024
    assert conf.minorCompactionThreshold == 0.3
    assert conf.flushInterval == 1000
    conf.validate()


def test_defaults_follow_bookkeeper() -> None:
    conf = bookie_config.BookieConfig()
    assert conf.journalSyncData is True
    assert conf.journal_dirs == ("data/bookkeeper/journal",)
    assert conf.dbStorage_readAheadCacheBatchSize == 100
    assert "journalMaxGroupWaitMSec=1" in config.render(conf)


@pytest.mark.parametrize(
    "overrides",
    [
        {"journalQueueSize": 0},
        {"dbStorage_writeCacheMaxSizeMb": 0},
        {"entryLogSizeLimit": 3 * 2**30},
        {"ledgerDirectories": ()},
        {"journalDirectory": "same", "ledgerDirectories": ("same",)},
    ],
)
def test_meaningless_limits_are_refused(overrides: dict[str, object]) -> None:
    with pytest.raises(errors.ConfigError):
        bookie_config.BookieConfig(**overrides).validate()  # type: ignore[arg-type]
