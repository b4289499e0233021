"""One load balancing round, as the leader broker and the operator both run it (pure).

Splits come first; a round that splits does not shed, because the reports it
read still describe the bundles before the split. Shedding state (smoothed
usage, recently moved bundles) is handed from round to round by the caller.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from pulsar_broker.loadbalance import model, shedding, splitting
from pulsar_broker.loadbalance.settings import SheddingSettings, SplitSettings


@dataclasses.dataclass(frozen=True)
class Round:
    splits: tuple[splitting.Split, ...]
    unloads: tuple[shedding.Unload, ...]
    state: shedding.SheddingState

    @property
    def changed(self) -> bool:
        return bool(self.splits or self.unloads)


def plan_round(reports: Sequence[model.BrokerReport], bundle_counts: Mapping[str, int],
               state: shedding.SheddingState, shedding_settings: SheddingSettings,
               split_settings: SplitSettings, now_ms: int, *, shedding_enabled: bool = True,
               split_enabled: bool = True) -> Round:
    """The decisions of one round from every live broker's latest report.
    bundle_counts: how many bundles each namespace ("tenant/ns") has now."""
    splits = splitting.plan(reports, bundle_counts, split_settings) if split_enabled else ()
    if splits or not shedding_enabled:
        return Round(splits, (), state)
    result = shedding.plan(reports, state, shedding_settings, now_ms)
    return Round((), result.unloads, result.state)
