"""The pulsar_ml_* sampler's growth per interval, idle ledgers included."""

from __future__ import annotations

from pulsar_broker.managed_ledger import stats
from pulsar_broker.web import ml_metrics


def test_an_idle_ledger_grows_by_nothing_and_then_by_what_it_counts_again() -> None:
    counters = stats.ManagedLedgerStats()
    counters.add_succeeded(1, 1, 100)
    sampler = ml_metrics.LedgerSampler()
    ledgers = [ml_metrics.LedgerCounters("ml", counters, 2)]
    sampler.tick(ledgers, stats.CacheCounts(), 0.0)
    sampler.tick(ledgers, stats.CacheCounts(), 10.0)
    assert sampler.growth("ml") == ml_metrics.LedgerGrowth()
    counters.add_succeeded(1, 1, 300)
    sampler.tick(ledgers, stats.CacheCounts(), 20.0)
    grown = sampler.growth("ml")
    assert (grown.counts.adds_succeeded, grown.counts.add_bytes) == (1, 300)
    assert grown.replicated_add_bytes == 600
    sampler.tick(ledgers, stats.CacheCounts(), 30.0)
    assert sampler.growth("ml") == ml_metrics.LedgerGrowth()


def test_a_reopened_ledger_counts_from_zero_even_when_its_counts_look_the_same() -> None:
    first, reopened = stats.ManagedLedgerStats(), stats.ManagedLedgerStats()
    first.add_succeeded(1, 1, 100)
    reopened.add_succeeded(1, 1, 100)
    sampler = ml_metrics.LedgerSampler()
    sampler.tick([ml_metrics.LedgerCounters("ml", first, 1)], stats.CacheCounts(), 0.0)
    sampler.tick([ml_metrics.LedgerCounters("ml", reopened, 1)], stats.CacheCounts(), 10.0)
    assert sampler.growth("ml").counts.adds_succeeded == 1
