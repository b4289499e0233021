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


def install(app: web.Application, service: BrokerService) -> None:
    load_manager = manager.LoadManager(service)
    app[LOAD_MANAGER] = load_manager
    app.router.add_routes(routes)

    async def running(app: web.Application) -> AsyncIterator[None]:
        await load_manager.start()
        yield
        await load_manager.close()

    app.cleanup_ctx.append(running)
