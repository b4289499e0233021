"""Which bundles to split, and where a bundle's hash range is cut: pure functions.

A bundle is split when it has more than one topic and exceeds any of
loadBalancerNamespaceBundleMaxTopics, ...MaxSessions (producers + consumers),
...MaxMsgRate (in + out) or ...MaxBandwidthMbytes (in + out), as long as its
namespace stays within loadBalancerNamespaceMaximumBundles. The split point
comes from one of Apache's algorithms: `range_equally_divide` cuts the range in
the middle, `topic_count_equally_divide` between the middle two topic hashes,
so each half holds half the topics. An admin may also split at given positions
(`specified_positions_divide`, never chosen by the planner).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from pulsar_broker.loadbalance import model
from pulsar_broker.loadbalance.settings import (
    RANGE_EQUALLY_DIVIDE,
    TOPIC_COUNT_EQUALLY_DIVIDE,
    SplitSettings,
)


@dataclasses.dataclass(frozen=True)
class Split:
    """Split bundle (owned by owner) with algorithm."""

    bundle: str
    owner: str
    algorithm: str
    reason: str


def over_limits(stats: model.BundleStats, settings: SplitSettings) -> str | None:
    """Why the bundle is too big or too hot, or None."""
    if stats.topics <= 1:
        return None
    if 0 < settings.max_topics < stats.topics:
        return f"{stats.topics} topics > {settings.max_topics}"
    if 0 < settings.max_sessions < stats.sessions:
        return f"{stats.sessions} sessions > {settings.max_sessions}"
    if 0 < settings.max_msg_rate < stats.msg_rate:
        return f"{stats.msg_rate:.0f} msg/s > {settings.max_msg_rate:.0f}"
    megabytes = stats.throughput / model.BYTES_PER_MB
    if 0 < settings.max_bandwidth_mb < megabytes:
        return f"{megabytes:.1f} MB/s > {settings.max_bandwidth_mb:.0f}"
    return None


def plan(reports: Sequence[model.BrokerReport], bundle_counts: Mapping[str, int],
         settings: SplitSettings) -> tuple[Split, ...]:
    """The splits of one round. bundle_counts: bundles per namespace ("tenant/ns") now."""
    counts = dict(bundle_counts)
    splits: list[Split] = []
    candidates = sorted((bundle, report.broker, stats) for report in reports
                        for bundle, stats in report.bundles.items())
    for bundle, owner, stats in candidates:
        if len(splits) >= settings.max_splits_per_round:
            break
        reason = over_limits(stats, settings)
        namespace = model.namespace_of(bundle)
        count = counts.get(namespace, 1)
        if reason is None or count >= settings.max_bundles_per_namespace:
            continue
        counts[namespace] = count + 1
        splits.append(Split(bundle, owner, settings.algorithm, reason))
    return tuple(splits)


def split_point(algorithm: str, lower: int, upper: int,
                topic_hashes: Iterable[int] = ()) -> int | None:
    """Where to cut [lower, upper): lower < point < upper, or None when it cannot be cut."""
    if algorithm == RANGE_EQUALLY_DIVIDE:
        point = lower + (upper - lower) // 2
    elif algorithm == TOPIC_COUNT_EQUALLY_DIVIDE:
        hashes = sorted(h for h in set(topic_hashes) if lower <= h <= upper)
        if len(hashes) < 2:
            return None
        middle = len(hashes) // 2
        below, above = hashes[middle - 1], hashes[middle]
        point = below + (above - below + 1) // 2
    else:
        raise ValueError(f"unknown split algorithm {algorithm!r}")
    return point if lower < point < upper else None


def specified_positions(lower: int, upper: int, positions: Iterable[int]) -> list[int]:
    """The given positions strictly inside [lower, upper), sorted; the others are ignored
    (as Apache's specified_positions_divide does)."""
    return sorted({p for p in positions if lower < p < upper})
