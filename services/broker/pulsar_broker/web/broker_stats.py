"""`/admin/v2/broker-stats/...`: this broker's load report and the stats of the topics it
serves, and the load manager's lifetime.

`install` gives the app a LoadManager (pulsar_broker.loadbalance.manager) that
runs while the app runs: it publishes this broker's load report and, on the
leader with loadBalancerEnabled=true, plans unloads and splits.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from pulsar_broker.loadbalance import manager
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import rates, rest, stats

routes = web.RouteTableDef()

LOAD_MANAGER = web.AppKey("load_manager", manager.LoadManager)


@routes.get("/admin/v2/broker-stats/load-report")
async def load_report(request: web.Request) -> web.Response:
    """Apache's LocalBrokerData of this broker: its latest sample of resource usage, rates
    and per-bundle stats."""
    load_manager = request.app[LOAD_MANAGER]
    sample = load_manager.last_report
    if sample is None:
        await load_manager.publish(force=True)
        sample = load_manager.last_report
    assert sample is not None
    return rest.ok_json(sample.to_json())


#: The per-topic fields of Apache's broker-stats topics dump, from the topic's stats.
_TOPIC_SUMMARY_FIELDS = ("publishers", "averageMsgSize", "msgRateIn",
                         "msgRateOut", "msgThroughputIn", "msgThroughputOut", "storageSize",
                         "backlogSize")
_SUBSCRIPTION_SUMMARY_FIELDS = ("consumers", "msgBacklog", "msgRateExpired", "msgRateOut",
                                "msgThroughputOut", "msgRateRedeliver", "type")


def _topic_summary(topic_stats: dict[str, Any]) -> dict[str, Any]:
    summary = {key: topic_stats[key] for key in _TOPIC_SUMMARY_FIELDS if key in topic_stats}
    summary["producerCount"] = len(topic_stats.get("publishers", []))
    summary["msgInCount"] = topic_stats.get("msgInCounter", 0)
    summary["pendingAddEntriesCount"] = topic_stats.get("pendingAddEntriesCount", 0)
    summary["replication"] = {}
    summary["subscriptions"] = {
        name: {key: sub[key] for key in _SUBSCRIPTION_SUMMARY_FIELDS if key in sub}
        for name, sub in topic_stats.get("subscriptions", {}).items()}
    return summary


@routes.get("/admin/v2/broker-stats/topics")
async def topics(request: web.Request) -> web.Response:
    """Every topic this broker serves, as Apache dumps them:
    {namespace: {bundle range: {"persistent"|"non-persistent": {topic: stats}}}}. Computed
    when asked (Apache refreshes its dump every statsUpdateFrequencyInSecs)."""
    service = rest.service(request)
    tracker = request.app[rates.TRACKER_KEY]
    dump: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
    loaded: list[Any] = [*service.loaded_topics, *service.non_persistent.loaded]
    for topic in sorted(loaded, key=lambda t: str(t.name)):
        bundle = await service.namespaces.bundle_of(topic.name)
        by_domain = dump.setdefault(str(topic.name.namespace_name), {}).setdefault(
            bundle.range, {})
        summary = _topic_summary(stats.topic_stats(topic, tracker))
        by_domain.setdefault(topic.name.domain.value, {})[str(topic.name)] = summary
    return rest.ok_json(dump)


@routes.get("/admin/v2/broker-stats/metrics")
async def monitoring_metrics(request: web.Request) -> web.Response:
    """Apache's per-namespace Metrics of this broker's topics: a list of
    {"metrics": {"brk_...": value}, "dimensions": {"namespace": ns}}. Apache's list also
    holds JVM and managed-ledger metrics (the Prometheus /metrics has ours)."""
    service = rest.service(request)
    tracker = request.app[rates.TRACKER_KEY]
    by_namespace: dict[str, dict[str, float]] = {}
    loaded: list[Any] = [*service.loaded_topics, *service.non_persistent.loaded]
    for topic in loaded:
        totals = by_namespace.setdefault(str(topic.name.namespace_name),
                                         dict.fromkeys(_NAMESPACE_METRICS, 0.0))
        _add_topic_metrics(totals, stats.topic_stats(topic, tracker))
    return rest.ok_json([{"metrics": metrics, "dimensions": {"namespace": ns}}
                         for ns, metrics in sorted(by_namespace.items())])


#: Apache's NamespaceStats metrics; replication is absent here, so its three stay 0.
_NAMESPACE_METRICS = ("brk_in_rate", "brk_in_tp_rate", "brk_out_rate", "brk_out_tp_rate",
                      "brk_storage_size", "brk_no_of_producers", "brk_no_of_subscriptions",
                      "brk_no_of_replicators", "brk_no_of_consumers", "brk_msg_backlog",
                      "brk_replication_backlog", "brk_max_replication_delay_second")


def _add_topic_metrics(totals: dict[str, float], topic_stats: dict[str, Any]) -> None:
    subscriptions = topic_stats.get("subscriptions", {}).values()
    totals["brk_in_rate"] += topic_stats.get("msgRateIn", 0)
    totals["brk_in_tp_rate"] += topic_stats.get("msgThroughputIn", 0)
    totals["brk_out_rate"] += topic_stats.get("msgRateOut", 0)
    totals["brk_out_tp_rate"] += topic_stats.get("msgThroughputOut", 0)
    totals["brk_storage_size"] += topic_stats.get("storageSize", 0)
    totals["brk_no_of_producers"] += len(topic_stats.get("publishers", []))
    totals["brk_no_of_subscriptions"] += len(subscriptions)
    totals["brk_no_of_consumers"] += sum(len(s.get("consumers", [])) for s in subscriptions)
    totals["brk_msg_backlog"] += sum(s.get("msgBacklog", 0) for s in subscriptions)


def install(app: web.Application, service: BrokerService) -> None:
    load_manager = manager.LoadManager(service)
    app[LOAD_MANAGER] = load_manager
    app.router.add_routes(routes)

    async def running(app: web.Application) -> AsyncIterator[None]:
        await load_manager.start()
        yield
        await load_manager.close()

    app.cleanup_ctx.append(running)
