"""What the proxy counts, and its `/metrics` in Prometheus text with Apache's proxy names.

Plain integers on the hot path (one addition per relayed chunk); the
Prometheus collector reads them only when scraped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from prometheus_client import core, registry

REQUEST_KINDS = ("lookup", "partitions_metadata", "get_topics_of_namespace", "get_schema")


@dataclasses.dataclass
class ProxyStats:
    active_connections: int = 0
    new_connections: int = 0
    rejected_connections: int = 0
    #: Bytes relayed between clients and brokers, both ways.
    binary_bytes: int = 0
    requests: dict[str, int] = dataclasses.field(
        default_factory=lambda: dict.fromkeys(REQUEST_KINDS, 0))
    rejected_requests: dict[str, int] = dataclasses.field(
        default_factory=lambda: dict.fromkeys(REQUEST_KINDS, 0))

    def count_request(self, kind: str) -> None:
        self.requests[kind] += 1

    def count_rejected_request(self, kind: str) -> None:
        self.rejected_requests[kind] += 1


class ProxyStatsCollector(registry.Collector):
    def __init__(self, proxy_stats: ProxyStats) -> None:
        self._stats = proxy_stats

    def collect(self) -> Iterator[core.Metric]:
        s = self._stats
        yield core.GaugeMetricFamily("pulsar_proxy_active_connections",
                                     "Client connections open now", value=s.active_connections)
        yield core.CounterMetricFamily("pulsar_proxy_new_connections",
                                       "Client connections accepted", value=s.new_connections)
        yield core.CounterMetricFamily(
            "pulsar_proxy_rejected_connections",
            "Client connections closed at once because a connection limit was reached",
            value=s.rejected_connections)
        yield core.CounterMetricFamily("pulsar_proxy_binary_bytes",
                                       "Bytes relayed between clients and brokers",
                                       value=s.binary_bytes)
        for kind in REQUEST_KINDS:
            yield core.CounterMetricFamily(f"pulsar_proxy_{kind}_requests",
                                           f"{kind} requests answered by the proxy",
                                           value=s.requests[kind])
            yield core.CounterMetricFamily(
                f"pulsar_proxy_rejected_{kind}_requests",
                f"{kind} requests refused because maxConcurrentLookupRequests were in flight",
                value=s.rejected_requests[kind])
