"""Settings of managed ledgers, under Apache Pulsar's broker.conf key names.

The broker builds one ManagedLedgerConfig from its own settings (same keys,
see `from_settings`) and may derive per-topic variants (retention from
namespace policies) with `dataclasses.replace`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pulsar_common import config, errors
from pulsar_common.config import setting

ONE_MB = 1024 * 1024
ONE_MINUTE_MS = 60_000


@dataclasses.dataclass(frozen=True)
class ManagedLedgerConfig:
    ensemble_size: int = setting(
        "managedLedgerDefaultEnsembleSize", 1, "Bookies each ledger is striped over"
    )
    write_quorum: int = setting(
        "managedLedgerDefaultWriteQuorum", 1, "Copies of each entry"
    )
    ack_quorum: int = setting(
        "managedLedgerDefaultAckQuorum", 1, "Copies that must be durable before an add completes"
    )
    max_entries_per_ledger: int = setting(
        "managedLedgerMaxEntriesPerLedger", 50000, "Roll over to a new ledger after this many"
    )
    max_size_per_ledger_mbytes: int = setting(
        "managedLedgerMaxSizePerLedgerMbytes", 2048, "Roll over to a new ledger after this size"
    )
    min_ledger_rollover_time_minutes: int = setting(
        "managedLedgerMinLedgerRolloverTimeMinutes",
        10,
        "A ledger is not rolled over for entries or size before it is this old",
    )
    max_ledger_rollover_time_minutes: int = setting(
        "managedLedgerMaxLedgerRolloverTimeMinutes",
        240,
        "A ledger with entries is rolled over once it is this old",
    )
    cache_size_mb: int = setting(
        "managedLedgerCacheSizeMB", 256, "Entry cache for tailing reads, shared by all topics"
    )
    cursor_position_flush_seconds: float = setting(
        "managedLedgerCursorPositionFlushSeconds",
        1.0,
        "Cursor positions are persisted at most this often (0: on every acknowledgement)",
    )
    max_unacked_ranges_to_persist: int = setting(
        "managedLedgerMaxUnackedRangesToPersist",
        10000,
        "Individually acknowledged ranges kept per cursor; later ones may be redelivered",
    )
    deletion_at_batch_index_level_enabled: bool = setting(
        "acknowledgmentAtBatchIndexLevelEnabled",
        True,
        "Keep acknowledgements of single messages of a batch (batch-index acks) in the cursor, "
        "persisted, and tell consumers which messages of a batch they need not receive again",
    )
    max_batch_deleted_index_to_persist: int = setting(
        "managedLedgerMaxBatchDeletedIndexToPersist",
        10000,
        "Partly acknowledged batches whose batch-index acks a cursor persists; acks of later "
        "ones are kept in memory only and may be redelivered after a restart",
    )
    add_entry_timeout_seconds: float = setting(
        "managedLedgerAddEntryTimeoutSeconds",
        30.0,
        "An add still waiting for a ledger to write to after this long fails (0: never); "
        "Apache's default is 0, see docs/design-choices.md",
    )
    retention_time_minutes: int = setting(
        "defaultRetentionTimeInMinutes", 0, "Keep consumed ledgers this long (-1: forever)"
    )
    retention_size_mb: int = setting(
        "defaultRetentionSizeInMB", 0, "Keep consumed ledgers up to this size (-1: no limit)"
    )

    def __post_init__(self) -> None:
        if not 1 <= self.ack_quorum <= self.write_quorum <= self.ensemble_size:
            raise errors.ConfigError(
                "managed ledger quorums must satisfy 1 <= ackQuorum <= writeQuorum <= "
                f"ensembleSize (got {self.ack_quorum}/{self.write_quorum}/{self.ensemble_size})"
            )
        positive: dict[str, float] = {
            "managedLedgerMaxEntriesPerLedger": self.max_entries_per_ledger,
            "managedLedgerMaxSizePerLedgerMbytes": self.max_size_per_ledger_mbytes,
            "managedLedgerMaxUnackedRangesToPersist": self.max_unacked_ranges_to_persist,
            "managedLedgerMaxBatchDeletedIndexToPersist": self.max_batch_deleted_index_to_persist,
        }
        not_negative: dict[str, float] = {
            "managedLedgerMinLedgerRolloverTimeMinutes": self.min_ledger_rollover_time_minutes,
            "managedLedgerMaxLedgerRolloverTimeMinutes": self.max_ledger_rollover_time_minutes,
            "managedLedgerCacheSizeMB": self.cache_size_mb,
            "managedLedgerCursorPositionFlushSeconds": self.cursor_position_flush_seconds,
            "managedLedgerAddEntryTimeoutSeconds": self.add_entry_timeout_seconds,
        }
        for key, value in positive.items():
            if value <= 0:
                raise errors.ConfigError(f"{key} must be positive (got {value})")
        for key, value in not_negative.items():
            if value < 0:
                raise errors.ConfigError(f"{key} must not be negative (got {value})")

    @property
    def max_size_per_ledger_bytes(self) -> int:
        return self.max_size_per_ledger_mbytes * ONE_MB

    @property
    def min_ledger_rollover_time_ms(self) -> int:
        return self.min_ledger_rollover_time_minutes * ONE_MINUTE_MS

    @property
    def max_ledger_rollover_time_ms(self) -> int:
        return self.max_ledger_rollover_time_minutes * ONE_MINUTE_MS

    @property
    def cache_size_bytes(self) -> int:
        return self.cache_size_mb * ONE_MB

    @property
    def retention_time_ms(self) -> int | None:
        """None means keep forever."""
        return None if self.retention_time_minutes < 0 else self.retention_time_minutes * 60_000

    @property
    def retention_size_bytes(self) -> int | None:
        """None means no size limit."""
        return None if self.retention_size_mb < 0 else self.retention_size_mb * ONE_MB


def from_settings(settings: Any) -> ManagedLedgerConfig:
    """Take every managed-ledger setting from another settings dataclass with the same keys."""
    theirs = config.keys_of(type(settings))
    values = {}
    for key, field in config.keys_of(ManagedLedgerConfig).items():
        if key in theirs:
            values[field.name] = getattr(settings, theirs[key].name)
    return ManagedLedgerConfig(**values)
