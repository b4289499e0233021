"""Pure parts: a namespace's Policies JSON over the broker's defaults, the per-topic
managed-ledger config derived from it, and the backlog size estimate."""

from __future__ import annotations

import pytest
from pulsar_broker import config as broker_config
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.topics import backlog_quota, policies

BROKER = broker_config.BrokerConfig(ttl_duration_default_in_seconds=30,
                                    backlog_quota_default_limit_bytes=4096,
                                    backlog_quota_default_retention_policy="producer_exception")
LEDGER = ml_config.ManagedLedgerConfig(retention_time_minutes=10, retention_size_mb=20)


def test_unset_fields_take_the_broker_defaults():
    resolved = policies.resolve(None, BROKER, LEDGER)
    assert (resolved.retention_time_minutes, resolved.retention_size_mb) == (10, 20)
    assert resolved.message_ttl_s == 30
    assert resolved.storage_quota == policies.BacklogQuota(4096, -1, "producer_exception")
    assert policies.ledger_config(LEDGER, resolved) == LEDGER


def test_namespace_values_win_over_the_defaults():
    stored = {
        "retention_policies": {"retentionTimeInMinutes": -1, "retentionSizeInMB": 5},
        "message_ttl_in_seconds": 0,
        "persistence": {"bookkeeperEnsemble": 3, "bookkeeperWriteQuorum": 2,
                        "bookkeeperAckQuorum": 2, "managedLedgerMaxMarkDeleteRate": 4.0},
        "backlog_quota_map": {"message_age": {"limitSize": -1, "limitTime": 60,
                                              "policy": "consumer_backlog_eviction"}},
    }
    resolved = policies.resolve(stored, BROKER, LEDGER)
    assert resolved.message_ttl_s == 0
    assert resolved.age_quota == policies.BacklogQuota(-1, 60, "consumer_backlog_eviction")
    derived = policies.ledger_config(LEDGER, resolved)
    assert (derived.retention_time_ms, derived.retention_size_bytes) == (None, 5 * 1024 * 1024)
    assert (derived.ensemble_size, derived.write_quorum, derived.ack_quorum) == (3, 2, 2)
    assert derived.cursor_position_flush_seconds == 0.25


def test_a_stored_persistence_record_that_cannot_work_keeps_the_broker_quorums():
    stored = {"persistence": {"bookkeeperEnsemble": 1, "bookkeeperWriteQuorum": 2,
                              "bookkeeperAckQuorum": 2}}
    derived = policies.ledger_config(LEDGER, policies.resolve(stored, BROKER, LEDGER))
    assert (derived.ensemble_size, derived.write_quorum, derived.ack_quorum) == (1, 1, 1)


LEDGERS = [ml.LedgerInfo(1, 10, 1000, 0), ml.LedgerInfo(2, 4, 400, 0), ml.LedgerInfo(3, 0, 0, 0)]


@pytest.mark.parametrize("mark_delete, expected", [
    (ml.Position(1, -1), 1400),   # nothing acknowledged
    (ml.Position(0, 5), 1400),    # before every stored ledger
    (ml.Position(1, 4), 900),     # half of ledger 1 acknowledged
    (ml.Position(1, 9), 400),     # ledger 1 done
    (ml.Position(2, 3), 0),       # everything
    (ml.Position(3, -1), 0),      # the empty current ledger
])
def test_backlog_size_counts_what_follows_the_mark_delete_position(mark_delete, expected):
    assert backlog_quota.estimated_backlog_size(LEDGERS, mark_delete) == expected
