"""This broker's load: process CPU and memory, byte and message rates per owned bundle.

Sampled from the loaded topics' counters; rates are the change since the
previous sample. What the fields mean here (docs/load-balancing.md):
- cpu: this process's CPU time over wall time, percent of one core; limit 100 x cores
  (Apache measures the host; brokers sharing one host would all look alike);
- memory: resident set size and the host's memory, MB (Apache: JVM heap);
- directMemory: 0 (no off-heap pool to report);
- bandwidthIn/Out: this broker's message bytes in/out, KB/s, against
  loadBalancerOverrideBrokerNicSpeedGbps (Apache: the NIC's counters).
"""

from __future__ import annotations

import os
import time
from typing import Any

from pulsar_broker.loadbalance import model, placement
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics import out_counters

DEFAULT_NIC_SPEED_GBPS = 10.0
MB = 1024 * 1024


#: A topic's counters at a sample: messages in, bytes in, messages out, bytes out.
_TopicSample = tuple[int, int, int, int]


class LoadSampler:
    """Builds a BrokerReport from the broker's state each time `sample` is called; rates
    are over the time between two samples' now_ms."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        self._out = out_counters.OutCounters()
        self._placement = placement.TopicPlacement()
        self._topics: dict[str, _TopicSample] = {}
        self._at_ms: int | None = None
        self._cpu_s = time.process_time()

    def sample(self, now_ms: int) -> model.BrokerReport:
        elapsed = (now_ms - self._at_ms) / 1000.0 if self._at_ms is not None else 0.0
        cpu_s = time.process_time()
        cpu_percent = 100.0 * (cpu_s - self._cpu_s) / elapsed if elapsed > 0 else 0.0
        self._at_ms, self._cpu_s = now_ms, cpu_s
        bundles = self._bundle_stats(elapsed)
        throughput_in = sum(b.msg_throughput_in for b in bundles.values()) / 1024
        throughput_out = sum(b.msg_throughput_out for b in bundles.values()) / 1024
        gbps = self.service.config.load_balancer_override_broker_nic_speed_gbps
        nic_kb = (gbps or DEFAULT_NIC_SPEED_GBPS) * 1e9 / 8 / 1024
        return model.BrokerReport(
            self.service.broker_id, self.service.web_service_url,
            self.service.broker_service_url,
            cpu=model.ResourceUsage(cpu_percent, 100.0 * (os.cpu_count() or 1)),
            memory=model.ResourceUsage(_rss_mb(), _host_memory_mb()),
            bandwidth_in=model.ResourceUsage(throughput_in, nic_kb),
            bandwidth_out=model.ResourceUsage(throughput_out, nic_kb),
            bundles=bundles, last_update_ms=now_ms)

    def _bundle_stats(self, elapsed_s: float) -> dict[str, model.BundleStats]:
        owned = self.service.namespaces.ownership.owned_bundles
        self._placement.update(owned)
        # Per bundle, in the order of model.BundleStats' fields; summed in the topics' order.
        sums: dict[str, list[Any]] = {str(b): [0.0, 0.0, 0.0, 0.0, 0, 0, 0] for b in owned}
        seen: dict[str, _TopicSample] = {}
        for topic in self.service.loaded_topics:
            name, bundle = self._placement.place(topic)
            consumers = [c for s in topic.subscriptions.values() for c in s.consumers]
            msg_out, bytes_out = self._out.totals(name, consumers)
            now: _TopicSample = (topic.msg_in, topic.bytes_in, msg_out, bytes_out)
            before = self._topics.get(name)
            if before == now:
                # An idle topic keeps its sample: what outlives a pass costs the garbage
                # collector's full collections on a heap of many topics.
                now = before
            seen[name] = now
            if bundle is None:
                continue
            total = sums[bundle]
            if before is not None and before is not now and elapsed_s > 0:
                total[0] += max(0, now[0] - before[0]) / elapsed_s
                total[1] += max(0, now[2] - before[2]) / elapsed_s
                total[2] += max(0, now[1] - before[1]) / elapsed_s
                total[3] += max(0, now[3] - before[3]) / elapsed_s
            total[4] += 1
            total[5] += len(topic.producers)
            total[6] += len(consumers)
        self._out.end_pass()
        self._placement.end_pass()
        self._topics = seen
        return {bundle: model.BundleStats(
                    msg_rate_in=total[0], msg_rate_out=total[1], msg_throughput_in=total[2],
                    msg_throughput_out=total[3], topics=total[4], producer_count=total[5],
                    consumer_count=total[6])
                for bundle, total in sums.items()}


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / MB


def _host_memory_mb() -> float:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / MB
    except (OSError, ValueError):
        return 0.0
