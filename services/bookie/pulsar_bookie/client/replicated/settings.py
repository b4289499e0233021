"""Ledger client settings, under BookKeeper client key names where they exist."""

from __future__ import annotations

import dataclasses

from pulsar_common.config import setting


@dataclasses.dataclass(frozen=True)
class ClientSettings:
    add_entry_timeout_ms: int = setting(
        "addEntryTimeoutMs", 5000, "An add not acknowledged by a bookie in this time counts as "
        "that bookie failing: the writer moves to another bookie")
    read_entry_timeout_ms: int = setting("readEntryTimeoutMs", 5000)
    speculative_read_timeout_ms: int = setting(
        "speculativeReadTimeout", 2000,
        "Ask the next bookie of the write set when the first has not answered in this time")
    ensemble_change_timeout_ms: int = setting(
        "ensembleChangeTimeoutMs", 10000,
        "How long a writer keeps looking for a replacement bookie before failing its adds")
    recovery_read_retry_max: int = setting(
        "recoveryReadRetryMax", 50, "Rounds of recovery reads before giving up on an entry")
    read_batch_max: int = setting("readBatchMax", 64, "Entry reads in flight per read call")
    pending_adds_max: int = setting(
        "pendingAddsMax", 10000, "Adds in flight per ledger before append waits")
