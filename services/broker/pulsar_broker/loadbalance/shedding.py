"""Which bundles to move, and where: Apache's ThresholdShedder idea, as a pure function.

Each broker's usage is the largest of its weighted resource usages (CPU,
memory, direct memory, bandwidth in and out, in percent), smoothed over rounds:
`usage = history * previous + (1 - history) * latest` (from the latest alone
when the broker's bundles changed since the previous round). A broker whose usage
exceeds the cluster average by more than the threshold sheds its busiest
bundles until the throughput it gives away would bring it down to the
average. Each bundle goes to the broker with the lowest projected usage, and
only if that broker stays within average + threshold once it has the bundle.

Invariants (checked by the property tests):
- at most `max_unloads_per_round` unloads; no bundle moves twice in a round;
- a bundle moves from the broker that reported it to a different live broker;
- no destination ends a round above average + threshold by the planner's estimate;
- a broker with a single bundle keeps it (moving it would only move the hot spot);
- a bundle moved within the grace period stays where it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from pulsar_broker.loadbalance import model
from pulsar_broker.loadbalance.settings import SheddingSettings


@dataclasses.dataclass(frozen=True)
class Unload:
    """Unload bundle from source; its next owner is destination."""

    bundle: str
    source: str
    destination: str
    reason: str


@dataclasses.dataclass(frozen=True)
class SheddingState:
    """What one round hands to the next: smoothed usage per broker, the bundles each broker
    had, and when each bundle was last moved (ms)."""

    usage: Mapping[str, float] = dataclasses.field(default_factory=dict)
    recently_unloaded: Mapping[str, int] = dataclasses.field(default_factory=dict)
    bundles: Mapping[str, frozenset[str]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class SheddingPlan:
    unloads: tuple[Unload, ...]
    state: SheddingState
    average_usage: float


def weighted_usage(report: model.BrokerReport, settings: SheddingSettings) -> float:
    """The broker's most used resource, in percent, each scaled by its weight."""
    return max(report.cpu.percent * settings.cpu_weight,
               report.memory.percent * settings.memory_weight,
               report.direct_memory.percent * settings.direct_memory_weight,
               report.bandwidth_in.percent * settings.bandwidth_in_weight,
               report.bandwidth_out.percent * settings.bandwidth_out_weight)


def smoothed_usage(reports: Sequence[model.BrokerReport], state: SheddingState,
                   settings: SheddingSettings) -> dict[str, float]:
    """History-weighted usage. A broker whose bundles changed since the last round starts
    again from its latest usage: its history describes load it no longer has (or lacks
    load it gained), and smoothing it would shed the moved load a second time."""
    history = settings.history_percentage
    usage = {}
    for report in reports:
        latest = weighted_usage(report, settings)
        before = state.usage.get(report.broker)
        same_bundles = state.bundles.get(report.broker) == frozenset(report.bundles)
        usage[report.broker] = (history * before + (1 - history) * latest
                                if before is not None and same_bundles else latest)
    return usage


def plan(reports: Sequence[model.BrokerReport], state: SheddingState,
         settings: SheddingSettings, now_ms: int) -> SheddingPlan:
    """The unloads of one round, from every live broker's latest report."""
    usage = smoothed_usage(reports, state, settings)
    recent = {bundle: at for bundle, at in state.recently_unloaded.items()
              if now_ms - at < settings.grace_period_ms}
    average = sum(usage.values()) / len(usage) if usage else 0.0
    unloads: list[Unload] = []
    if len(reports) >= 2:
        projected = dict(usage)
        ceiling = average + settings.threshold_percentage
        for report in sorted(reports, key=lambda r: (-usage[r.broker], r.broker)):
            if usage[report.broker] <= ceiling:
                break
            room = settings.max_unloads_per_round - len(unloads)
            unloads += _shed(report, usage[report.broker], average, ceiling, projected, recent,
                             settings, room)
    for unload in unloads:
        recent[unload.bundle] = now_ms
    bundles = {report.broker: frozenset(report.bundles) for report in reports}
    return SheddingPlan(tuple(unloads), SheddingState(usage, recent, bundles), average)


def _shed(report: model.BrokerReport, usage: float, average: float, ceiling: float,
          projected: dict[str, float], recent: Mapping[str, int], settings: SheddingSettings,
          room: int) -> list[Unload]:
    """Unloads from one overloaded broker, updating projected usage as bundles move."""
    throughput = report.throughput
    if room <= 0 or throughput <= 0 or len(report.bundles) <= 1:
        return []
    to_offload = throughput * (usage - average) / usage
    if to_offload < settings.min_throughput_mb * model.BYTES_PER_MB:
        return []
    unloads: list[Unload] = []
    offloaded = 0.0
    candidates = sorted(report.bundles.items(), key=lambda item: (-item[1].throughput, item[0]))
    kept = len(report.bundles)
    for bundle, stats in candidates:
        if offloaded >= to_offload or len(unloads) >= room or kept <= 1:
            break
        if bundle in recent or stats.throughput <= 0:
            continue
        share = usage * stats.throughput / throughput
        destination = _destination(report.broker, share, ceiling, projected)
        if destination is None:
            continue
        projected[destination] += share
        projected[report.broker] -= share
        offloaded += stats.throughput
        kept -= 1
        unloads.append(Unload(bundle, report.broker, destination,
                              f"broker usage {usage:.1f}% > average {average:.1f}% + threshold"))
    return unloads


def _destination(source: str, share: float, ceiling: float,
                 projected: Mapping[str, float]) -> str | None:
    """The broker with the lowest projected usage that stays within the ceiling with share."""
    others = [(usage, broker) for broker, usage in projected.items() if broker != source]
    if not others:
        return None
    usage, broker = min(others)
    return broker if usage + share <= ceiling else None
