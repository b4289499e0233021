"""Bundle rebalancing run by the operator: the brokers' own planner, fed and carried out over REST.

The planner is the one the leader broker runs (`pulsar_broker.loadbalance.planner.plan_round`:
splits over the loadBalancerNamespaceBundleMax* limits, ThresholdShedder unloads with a
destination), with its settings read from the brokers' rendered config. When the operator
balances (spec.broker.config sets no loadBalancerEnabled), it renders
`loadBalancerEnabled=false` into broker.conf, so the brokers never act at the same time
(docs/design-choices.md). One step here:

- waits for the shedding interval (loadBalancerSheddingIntervalSeconds, else ...Minutes)
  since the last round, and for a few report intervals after a round that changed something;
- reads every ready broker's `GET /admin/v2/broker-stats/load-report` and each namespace's
  `GET /admin/v2/namespaces/{tenant}/{ns}/bundles`;
- plans and calls the owner broker: `PUT .../{bundle}/split?unload=&splitAlgorithmName=`,
  `PUT .../{bundle}/unload?destinationBroker=`.

The smoothed usage history lives in the operator's memory (a restarted operator starts it
again from the latest reports, as a new leader broker does); the bundles moved within the
grace period are kept in status.rebalance so they are not moved again after a restart.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import aiohttp
from pulsar_broker import config as broker_config
from pulsar_broker.loadbalance import model, planner, settings, shedding
from pulsar_common import config as common_config

from pulsar_operator import conditions, errors
from pulsar_operator.loops import report

CONDITION = "BundleRebalancing"
ENABLED_KEY = "loadBalancerEnabled"
#: Report intervals to wait after a round that moved something, as the leader broker does.
SETTLE_REPORTS = 3
REQUEST_TIMEOUT_S = 10.0


def operator_balances(broker_overrides: Mapping[str, str]) -> bool:
    """The operator balances unless the spec sets loadBalancerEnabled itself (then the brokers
    balance when it is true, and nobody does when it is false, as in Apache)."""
    return ENABLED_KEY not in broker_overrides


def broker_settings(rendered: Mapping[str, str]) -> broker_config.BrokerConfig:
    """The brokers' settings as their broker.conf gives them (keys the broker does not know skipped)."""
    known = common_config.keys_of(broker_config.BrokerConfig)
    overrides = {k: v for k, v in rendered.items() if k in known and v != ""}
    return common_config.load(broker_config.BrokerConfig, None, overrides, environ={})


class Brokers(Protocol):
    async def report(self, broker_id: str) -> dict[str, Any] | None: ...
    async def bundle_count(self, broker_id: str, namespace: str) -> int | None: ...
    async def put(self, broker_id: str, path: str) -> None: ...


class HttpBrokers:
    """Brokers by id (`host:webPort`, their registration name), reached at http://<id> (the plain
    port stays on inside the cluster with spec.tls); `headers` carry the operator's token."""

    def __init__(self, headers: Mapping[str, str] | None = None) -> None:
        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
                                              headers=dict(headers or {}))

    async def close(self) -> None:
        await self._session.close()

    async def _get(self, url: str) -> Any:
        try:
            async with self._session.get(url) as resp:
                return await resp.json(content_type=None) if resp.status == 200 else None
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError):
            return None

    async def report(self, broker_id: str) -> dict[str, Any] | None:
        found = await self._get(f"http://{broker_id}/admin/v2/broker-stats/load-report")
        return found if isinstance(found, dict) else None

    async def bundle_count(self, broker_id: str, namespace: str) -> int | None:
        found = await self._get(f"http://{broker_id}/admin/v2/namespaces/{namespace}/bundles")
        count = found.get("numBundles") if isinstance(found, dict) else None
        return int(count) if isinstance(count, int) else None

    async def put(self, broker_id: str, path: str) -> None:
        try:
            async with self._session.put(f"http://{broker_id}{path}") as resp:
                if resp.status >= 300:
                    raise errors.AdminApiError("PUT", path, resp.status, (await resp.text())[:300])
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise errors.AdminApiError("PUT", path, None, f"broker {broker_id} unreachable: {exc!r}") from exc


@dataclasses.dataclass
class Memory:
    """What the operator keeps between rounds of one cluster."""

    state: shedding.SheddingState = dataclasses.field(default_factory=shedding.SheddingState)
    last_round_ms: int = 0
    settled_ms: int = 0


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: dict[str, Any]
    condition: conditions.Condition
    events: tuple[report.Event, ...] = ()


def interval_ms(conf: broker_config.BrokerConfig) -> int:
    seconds = conf.load_balancer_shedding_interval_seconds
    return int((seconds if seconds > 0 else conf.load_balancer_shedding_interval_minutes * 60) * 1000)


async def _reports(brokers: Brokers, broker_ids: Sequence[str]) -> list[model.BrokerReport]:
    found = []
    for broker_id in broker_ids:
        raw = await brokers.report(broker_id)
        if raw is not None and "lastUpdate" in raw:
            found.append(model.BrokerReport.from_json(broker_id, raw))
    return found


async def _bundle_counts(brokers: Brokers, reports: Sequence[model.BrokerReport]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for namespace in sorted({model.namespace_of(b) for r in reports for b in r.bundles}):
        count = await brokers.bundle_count(reports[0].broker, namespace)
        if count is not None:
            counts[namespace] = count
    return counts


def _recently(old: Mapping[str, Any], now_ms: int, grace_ms: int) -> dict[str, int]:
    raw = old.get("recentlyUnloaded") if isinstance(old.get("recentlyUnloaded"), dict) else {}
    return {str(b): int(t) for b, t in (raw or {}).items() if now_ms - int(t) < grace_ms}


async def _execute(brokers: Brokers, decided: planner.Round, conf: broker_config.BrokerConfig) -> list[report.Event]:
    events = []
    unload = str(conf.load_balancer_auto_unload_split_bundles_enabled).lower()
    for split in decided.splits:
        query = urllib.parse.urlencode({"unload": unload, "splitAlgorithmName": split.algorithm})
        await brokers.put(split.owner, f"/admin/v2/namespaces/{split.bundle}/split?{query}")
        events.append(report.Event(report.NORMAL, "BundleSplit", f"{split.bundle} on {split.owner}: {split.reason}"))
    for move in decided.unloads:
        query = urllib.parse.urlencode({"destinationBroker": move.destination})
        await brokers.put(move.source, f"/admin/v2/namespaces/{move.bundle}/unload?{query}")
        events.append(report.Event(report.NORMAL, "BundleUnloaded",
                                   f"{move.bundle} from {move.source} to {move.destination}: {move.reason}"))
    return events


async def step(brokers: Brokers, broker_ids: Sequence[str], conf: broker_config.BrokerConfig, memory: Memory,
               old: Mapping[str, Any], now_ms: int) -> Outcome | None:
    """One round when it is due (None when it is not, or no broker reported)."""
    if now_ms < max(memory.last_round_ms + interval_ms(conf), memory.settled_ms):
        return None
    reports = await _reports(brokers, broker_ids)
    if not reports:
        return None
    shedding_settings, split_settings = settings.from_broker_config(conf)
    recently = _recently(old, now_ms, shedding_settings.grace_period_ms)
    state = dataclasses.replace(memory.state, recently_unloaded={**memory.state.recently_unloaded, **recently})
    decided = planner.plan_round(reports, await _bundle_counts(brokers, reports), state, shedding_settings,
                                 split_settings, now_ms, shedding_enabled=conf.load_balancer_shedding_enabled,
                                 split_enabled=conf.load_balancer_auto_bundle_split_enabled)
    events = await _execute(brokers, decided, conf)
    memory.state, memory.last_round_ms = decided.state, now_ms
    if decided.changed:
        memory.settled_ms = now_ms + SETTLE_REPORTS * conf.load_balancer_report_update_min_interval_millis
    counters = {key: int(old.get(key) or 0) for key in ("rounds", "splits", "unloads")}
    status = {
        "rounds": counters["rounds"] + 1,
        "splits": counters["splits"] + len(decided.splits),
        "unloads": counters["unloads"] + len(decided.unloads),
        "lastRoundMs": now_ms,
        "brokers": len(reports),
        "recentlyUnloaded": {**recently, **{u.bundle: now_ms for u in decided.unloads}} or None,
    }
    if decided.splits:
        cond = conditions.Condition(CONDITION, True, "Splitting", f"{len(decided.splits)} bundles split")
    elif decided.unloads:
        cond = conditions.Condition(CONDITION, True, "Shedding",
                                    f"{len(decided.unloads)} bundles moved off brokers above the average")
    else:
        cond = conditions.Condition(CONDITION, False, "Balanced",
                                    f"{len(reports)} brokers within loadBalancerBrokerThresholdShedderPercentage")
    return Outcome(status, cond, tuple(events))
