"""The planner's settings, by Apache's broker.conf names (see docs/load-balancing.md).

A plain frozen record so the operator can build one from its own CR fields;
`from_broker_config` reads the broker's.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pulsar_broker.config import BrokerConfig

RANGE_EQUALLY_DIVIDE = "range_equally_divide"
TOPIC_COUNT_EQUALLY_DIVIDE = "topic_count_equally_divide"
SPECIFIED_POSITIONS_DIVIDE = "specified_positions_divide"
#: What the planner (defaultNamespaceBundleSplitAlgorithm) may use.
SPLIT_ALGORITHMS = (RANGE_EQUALLY_DIVIDE, TOPIC_COUNT_EQUALLY_DIVIDE)
#: What an admin's split request may name (positions come in its body).
ADMIN_SPLIT_ALGORITHMS = (*SPLIT_ALGORITHMS, SPECIFIED_POSITIONS_DIVIDE)

MINUTE_MS = 60_000


@dataclasses.dataclass(frozen=True)
class SheddingSettings:
    """ThresholdShedder: loadBalancerBrokerThresholdShedderPercentage and friends."""

    #: A broker sheds when its usage exceeds the cluster average by more than this (percent).
    threshold_percentage: float = 10.0
    #: Weight of the previous smoothed usage (loadBalancerHistoryResourcePercentage).
    history_percentage: float = 0.9
    cpu_weight: float = 1.0
    memory_weight: float = 1.0
    direct_memory_weight: float = 1.0
    bandwidth_in_weight: float = 1.0
    bandwidth_out_weight: float = 1.0
    #: A broker sheds only when it would move at least this much (MB/s, in + out).
    min_throughput_mb: float = 10.0
    #: Most bundles unloaded in one round.
    max_unloads_per_round: int = 8
    #: A bundle the balancer moved is left where it went for this long.
    grace_period_ms: int = 30 * MINUTE_MS


@dataclasses.dataclass(frozen=True)
class SplitSettings:
    """loadBalancerNamespaceBundleMax*: a bundle over any limit is split (<= 0: no limit)."""

    max_topics: int = 1000
    max_sessions: int = 1000
    max_msg_rate: float = 30000.0
    max_bandwidth_mb: float = 100.0
    #: Namespaces never get more bundles than this (loadBalancerNamespaceMaximumBundles).
    max_bundles_per_namespace: int = 128
    max_splits_per_round: int = 10
    algorithm: str = RANGE_EQUALLY_DIVIDE


def from_broker_config(conf: BrokerConfig) -> tuple[SheddingSettings, SplitSettings]:
    """The planner's settings from the broker's configuration."""
    shedding = SheddingSettings(
        threshold_percentage=conf.load_balancer_broker_threshold_shedder_percentage,
        history_percentage=conf.load_balancer_history_resource_percentage,
        cpu_weight=conf.load_balancer_cpu_resource_weight,
        memory_weight=conf.load_balancer_memory_resource_weight,
        direct_memory_weight=conf.load_balancer_direct_memory_resource_weight,
        bandwidth_in_weight=conf.load_balancer_bandwith_in_resource_weight,
        bandwidth_out_weight=conf.load_balancer_bandwith_out_resource_weight,
        min_throughput_mb=conf.load_balancer_bundle_unload_min_throughput_threshold,
        max_unloads_per_round=conf.load_balancer_max_bundles_to_unload_per_cycle,
        grace_period_ms=int(conf.load_balancer_shedding_grace_period_minutes * MINUTE_MS))
    split = SplitSettings(
        max_topics=conf.load_balancer_namespace_bundle_max_topics,
        max_sessions=conf.load_balancer_namespace_bundle_max_sessions,
        max_msg_rate=conf.load_balancer_namespace_bundle_max_msg_rate,
        max_bandwidth_mb=conf.load_balancer_namespace_bundle_max_bandwidth_mbytes,
        max_bundles_per_namespace=conf.load_balancer_namespace_maximum_bundles,
        max_splits_per_round=conf.load_balancer_max_number_of_bundles_to_split_per_cycle,
        algorithm=conf.default_namespace_bundle_split_algorithm)
    return shedding, split
