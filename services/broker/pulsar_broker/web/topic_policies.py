"""Topic-level policies: `/admin/v2/{persistent|non-persistent}/{t}/{ns}/{topic}/<policy>`.

A value set on a topic overrides its namespace's for that topic (every
partition of a partitioned topic); removing it gives the namespace's back.
Stored as one record per topic with Apache's TopicPolicies field names;
Apache keeps them in the namespace's `__change_events` system topic
(topicLevelPoliciesEnabled). GET answers the topic's own value, or nothing
(204) when the topic has none; `applied=true` is not supported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

from pulsar_broker import errors
from pulsar_broker.web import namespaces, rest

routes = web.RouteTableDef()

TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}"


async def _update(request: web.Request, field: str, value: Any) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    await service.check_namespace(name.namespace_name)
    stored = await service.resources.get_topic_policies(name.partitioned_topic_name)
    if value is None:
        stored.pop(field, None)
    else:
        stored[field] = value
    await service.resources.set_topic_policies(name.partitioned_topic_name, stored)
    await service.policies.topic_changed(name)
    return rest.no_content()


def _topic_policy(path: str, field: str, check: Callable[[Any], Any],
                  from_query: str | None = None) -> None:
    """GET, POST (set) and DELETE of one TopicPolicies field. from_query: the value comes in
    that query parameter instead of the body (Apache's messageTTL)."""

    async def get_value(request: web.Request) -> web.Response:
        if rest.query_flag(request, "applied"):
            raise errors.NotAllowedError("applied=true is not supported; GET the namespace's "
                                         "policy for the value in force")
        name = rest.topic_name(request)
        stored = await rest.service(request).resources.get_topic_policies(
            name.partitioned_topic_name)
        value = stored.get(field)
        return rest.no_content() if value is None else rest.ok_json(value)

    async def set_value(request: web.Request) -> web.Response:
        if from_query is not None:
            if from_query not in request.query:
                raise errors.InvalidRequestError(f"{from_query} is required")
            raw: Any = request.query[from_query]
            try:
                raw = int(raw)
            except ValueError as exc:
                raise errors.InvalidRequestError(f"{from_query} must be an integer") from exc
        else:
            raw = await rest.body_json(request)
        return await _update(request, field, check(raw))

    async def remove_value(request: web.Request) -> web.Response:
        return await _update(request, field, None)

    routes.get(TOPIC + path)(get_value)
    routes.post(TOPIC + path)(set_value)
    routes.delete(TOPIC + path)(remove_value)


_topic_policy("/retention", "retentionPolicies", namespaces.retention_policies)
_topic_policy("/messageTTL", "messageTTLInSeconds", namespaces.non_negative_int,
              from_query="messageTTL")
_topic_policy("/maxProducers", "maxProducerPerTopic", namespaces.limit)
_topic_policy("/maxConsumers", "maxConsumerPerTopic", namespaces.limit)
_topic_policy("/maxConsumersPerSubscription", "maxConsumersPerSubscription", namespaces.limit)
_topic_policy("/maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic", namespaces.limit)
_topic_policy("/maxUnackedMessagesOnConsumer", "maxUnackedMessagesOnConsumer", namespaces.limit)
_topic_policy("/publishRate", "publishRate", namespaces.publish_rate)
_topic_policy("/compactionThreshold", "compactionThreshold", namespaces.non_negative_long)
_topic_policy("/dispatchRate", "dispatchRate", namespaces.dispatch_rate)
_topic_policy("/subscriptionDispatchRate", "subscriptionDispatchRate", namespaces.dispatch_rate)
_topic_policy("/subscribeRate", "subscribeRate", namespaces.subscribe_rate)
