"""Managed-ledger settings under Apache's keys, and the byte-bounded entry cache."""

from __future__ import annotations

import dataclasses

import pytest
from pulsar_broker.managed_ledger import api, cache, config
from pulsar_common import config as common_config
from pulsar_common import errors as common_errors


def test_settings_load_from_apache_keys() -> None:
    loaded = common_config.load(
        config.ManagedLedgerConfig,
        overrides={
            "managedLedgerMaxEntriesPerLedger": "10",
            "managedLedgerMinLedgerRolloverTimeMinutes": "0",
            "managedLedgerCursorPositionFlushSeconds": "0.5",
            "defaultRetentionTimeInMinutes": "-1",
            "managedLedgerMaxUnackedRangesToPersist": "7",
        },
    )
    assert loaded.max_entries_per_ledger == 10
    assert loaded.min_ledger_rollover_time_ms == 0
    assert loaded.cursor_position_flush_seconds == 0.5
    assert loaded.retention_time_ms is None
    assert loaded.retention_size_bytes == 0
    assert loaded.max_unacked_ranges_to_persist == 7


def test_defaults_follow_apache() -> None:
    defaults = config.ManagedLedgerConfig()
    assert defaults.max_entries_per_ledger == 50000
    assert defaults.max_size_per_ledger_mbytes == 2048
    assert defaults.min_ledger_rollover_time_minutes == 10
    assert defaults.max_ledger_rollover_time_minutes == 240
    assert defaults.max_unacked_ranges_to_persist == 10000


@pytest.mark.parametrize(
    "bad",
    [
        {"ensemble_size": 1, "write_quorum": 2},
        {"ensemble_size": 3, "write_quorum": 2, "ack_quorum": 0},
        {"max_entries_per_ledger": 0},
        {"cache_size_mb": -1},
    ],
)
def test_invalid_settings_are_refused_at_start_up(bad: dict[str, int]) -> None:
    with pytest.raises(common_errors.ConfigError):
        config.ManagedLedgerConfig(**bad)


@dataclasses.dataclass(frozen=True)
class OtherSettings:
    entries: int = common_config.setting("managedLedgerMaxEntriesPerLedger", 123)
    unrelated: str = common_config.setting("clusterName", "standalone")


def test_settings_are_taken_from_other_settings_by_apache_key() -> None:
    taken = config.from_settings(OtherSettings())
    assert taken.max_entries_per_ledger == 123
    assert taken.cache_size_mb == config.ManagedLedgerConfig().cache_size_mb


def entry(ledger: int, entry_id: int, size: int) -> api.Entry:
    return api.Entry(api.Position(ledger, entry_id), b"x" * size)


def test_cache_evicts_the_oldest_entries_to_stay_within_its_limit() -> None:
    entries = cache.EntryCache(limit_bytes=100)
    for i in range(5):
        entries.insert("t", entry(1, i, 30))
    assert entries.size_bytes == 90 and len(entries) == 3
    assert entries.get("t", api.Position(1, 1)) is None
    assert entries.get("t", api.Position(1, 4)) is not None
    assert entries.evictions == 2


def test_cache_skips_an_entry_larger_than_the_limit_and_can_be_disabled() -> None:
    entries = cache.EntryCache(limit_bytes=10)
    entries.insert("t", entry(1, 0, 11))
    assert len(entries) == 0
    disabled = cache.EntryCache(limit_bytes=0)
    disabled.insert("t", entry(1, 0, 1))
    assert len(disabled) == 0


def test_cache_invalidation_by_ledger_and_by_managed_ledger() -> None:
    entries = cache.EntryCache(limit_bytes=1000)
    entries.insert("a", entry(1, 0, 10))
    entries.insert("a", entry(2, 0, 10))
    entries.insert("b", entry(1, 0, 10))
    entries.invalidate_ledger("a", 1)
    assert not entries.contains("a", api.Position(1, 0))
    assert entries.contains("a", api.Position(2, 0))
    entries.invalidate_all("a")
    assert len(entries) == 1 and entries.size_bytes == 10
