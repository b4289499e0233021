"""A broker's load report, as Apache's LocalBrokerData: resource usages, rates, bundle stats.

Brokers write it to their key `/loadbalance/brokers/<broker>` (the registration
and the report are one record, as in Apache's modular load manager) and
`/admin/v2/broker-stats/load-report` answers with it. Only json here: the
operator reads reports with these same functions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

BYTES_PER_MB = 1024.0 * 1024.0


@dataclasses.dataclass(frozen=True)
class ResourceUsage:
    """Apache's ResourceUsage: usage and limit in the same unit; percent is what counts."""

    usage: float = 0.0
    limit: float = 0.0

    @property
    def percent(self) -> float:
        return 100.0 * self.usage / self.limit if self.limit > 0 else 0.0

    def to_json(self) -> dict[str, float]:
        return {"usage": self.usage, "limit": self.limit}

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> ResourceUsage:
        value = value or {}
        return cls(float(value.get("usage") or 0.0), float(value.get("limit") or 0.0))


@dataclasses.dataclass(frozen=True, kw_only=True)
class BundleStats:
    """Apache's NamespaceBundleStats of one bundle a broker owns."""

    msg_rate_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_in: float = 0.0
    msg_throughput_out: float = 0.0
    topics: int = 0
    producer_count: int = 0
    consumer_count: int = 0

    @property
    def msg_rate(self) -> float:
        return self.msg_rate_in + self.msg_rate_out

    @property
    def throughput(self) -> float:
        """Bytes per second, in plus out."""
        return self.msg_throughput_in + self.msg_throughput_out

    @property
    def sessions(self) -> int:
        return self.producer_count + self.consumer_count

    def to_json(self) -> dict[str, Any]:
        return {"msgRateIn": self.msg_rate_in, "msgThroughputIn": self.msg_throughput_in,
                "msgRateOut": self.msg_rate_out, "msgThroughputOut": self.msg_throughput_out,
                "consumerCount": self.consumer_count, "producerCount": self.producer_count,
                "topics": self.topics, "cacheSize": 0}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> BundleStats:
        return cls(msg_rate_in=float(value.get("msgRateIn") or 0.0),
                   msg_rate_out=float(value.get("msgRateOut") or 0.0),
                   msg_throughput_in=float(value.get("msgThroughputIn") or 0.0),
                   msg_throughput_out=float(value.get("msgThroughputOut") or 0.0),
                   topics=int(value.get("topics") or 0),
                   producer_count=int(value.get("producerCount") or 0),
                   consumer_count=int(value.get("consumerCount") or 0))


@dataclasses.dataclass(frozen=True)
class BrokerReport:
    """One broker's load at last_update_ms. bundles maps "tenant/ns/0x..._0x..." to stats."""

    broker: str
    web_service_url: str = ""
    pulsar_service_url: str = ""
    cpu: ResourceUsage = ResourceUsage()
    memory: ResourceUsage = ResourceUsage()
    direct_memory: ResourceUsage = ResourceUsage()
    bandwidth_in: ResourceUsage = ResourceUsage()
    bandwidth_out: ResourceUsage = ResourceUsage()
    bundles: Mapping[str, BundleStats] = dataclasses.field(default_factory=dict)
    last_update_ms: int = 0

    @property
    def msg_rate_in(self) -> float:
        return sum(b.msg_rate_in for b in self.bundles.values())

    @property
    def msg_rate_out(self) -> float:
        return sum(b.msg_rate_out for b in self.bundles.values())

    @property
    def msg_throughput_in(self) -> float:
        return sum(b.msg_throughput_in for b in self.bundles.values())

    @property
    def msg_throughput_out(self) -> float:
        return sum(b.msg_throughput_out for b in self.bundles.values())

    @property
    def throughput(self) -> float:
        return self.msg_throughput_in + self.msg_throughput_out

    def to_json(self, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Apache's LocalBrokerData fields; extra adds registration fields (listeners...)."""
        bundles = sorted(self.bundles)
        return {
            **(extra or {}),
            "webServiceUrl": self.web_service_url,
            "pulsarServiceUrl": self.pulsar_service_url,
            "cpu": self.cpu.to_json(), "memory": self.memory.to_json(),
            "directMemory": self.direct_memory.to_json(),
            "bandwidthIn": self.bandwidth_in.to_json(),
            "bandwidthOut": self.bandwidth_out.to_json(),
            "msgThroughputIn": self.msg_throughput_in, "msgThroughputOut": self.msg_throughput_out,
            "msgRateIn": self.msg_rate_in, "msgRateOut": self.msg_rate_out,
            "lastUpdate": self.last_update_ms,
            "lastStats": {name: self.bundles[name].to_json() for name in bundles},
            "numTopics": sum(b.topics for b in self.bundles.values()),
            "numBundles": len(bundles),
            "numConsumers": sum(b.consumer_count for b in self.bundles.values()),
            "numProducers": sum(b.producer_count for b in self.bundles.values()),
            "bundles": bundles,
            "loadReportType": "LocalBrokerData",
            "persistentTopicsEnabled": True,
            "nonPersistentTopicsEnabled": False,
        }

    @classmethod
    def from_json(cls, broker: str, value: Mapping[str, Any]) -> BrokerReport:
        stats = value.get("lastStats") or {}
        return cls(broker, str(value.get("webServiceUrl") or ""),
                   str(value.get("pulsarServiceUrl") or ""),
                   ResourceUsage.from_json(value.get("cpu")),
                   ResourceUsage.from_json(value.get("memory")),
                   ResourceUsage.from_json(value.get("directMemory")),
                   ResourceUsage.from_json(value.get("bandwidthIn")),
                   ResourceUsage.from_json(value.get("bandwidthOut")),
                   {name: BundleStats.from_json(s) for name, s in stats.items()},
                   int(value.get("lastUpdate") or 0))


def namespace_of(bundle: str) -> str:
    """"tenant/ns" of a bundle name "tenant/ns/0x..._0x..."."""
    return bundle.rsplit("/", 1)[0]


def range_of(bundle: str) -> str:
    return bundle.rsplit("/", 1)[1]
