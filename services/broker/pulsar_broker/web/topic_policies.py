"""Topic-level policies: `/admin/v2/{persistent|non-persistent}/{t}/{ns}/{topic}/<policy>`.

A value set on a topic overrides its namespace's for that topic (every
partition of a partitioned topic); removing it gives the namespace's back.
Stored as one record per topic with Apache's TopicPolicies field names;
Apache keeps them in the namespace's `__change_events` system topic
(topicLevelPoliciesEnabled). GET answers the topic's own value, or nothing
(204) when the topic has none; with `applied=true` it answers the value in
force instead: the topic's, else the namespace's, else the broker's default,
as Apache does for the policies whose GET takes that parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from pulsar_broker import config as broker_config
from pulsar_broker import errors
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.topics import policies
from pulsar_broker.web import namespaces, rest

routes = web.RouteTableDef()

TOPIC = "/admin/v2/" + rest.DOMAINS + "/{tenant}/{namespace}/{topic}"

#: What `applied=true` answers when neither the topic nor its namespace sets the policy.
BrokerDefault = Callable[[broker_config.BrokerConfig, ml_config.ManagedLedgerConfig], Any]


async def _update(request: web.Request, change: Callable[[dict[str, Any]], None]) -> web.Response:
    name = rest.topic_name(request)
    service = rest.service(request)
    await service.check_namespace(name.namespace_name)
    stored = await service.resources.get_topic_policies(name.partitioned_topic_name)
    change(stored)
    await service.resources.set_topic_policies(name.partitioned_topic_name, stored)
    await service.policies.topic_changed(name)
    return rest.no_content()


def _set_field(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(stored: dict[str, Any]) -> None:
        if value is None:
            stored.pop(field, None)
        else:
            stored[field] = value
    return change


async def _stored(request: web.Request) -> dict[str, Any]:
    name = rest.topic_name(request)
    return await rest.service(request).resources.get_topic_policies(name.partitioned_topic_name)


async def _applied(request: web.Request, namespace_field: str, default: BrokerDefault) -> Any:
    """The namespace's value of the policy (an empty record, such as a namespace's backlog quota
    map without quotas, counts as none), else the broker's default."""
    service = rest.service(request)
    ns = rest.topic_name(request).namespace_name
    value = (await service.resources.get_policies(ns)).get(namespace_field)
    if value is None or value == {}:
        return default(service.config, service.policies.default_ledger)
    return value


def _answer(value: Any) -> web.Response:
    return rest.no_content() if value is None else rest.ok_json(value)


def _topic_policy(path: str, field: str, check: Callable[[Any], Any],
                  from_query: str | None = None, default: BrokerDefault | None = None,
                  limits: Callable[[Any, broker_config.BrokerConfig], None] | None = None
                  ) -> None:
    """GET, POST (set) and DELETE of one TopicPolicies field. from_query: the value comes in
    that query parameter instead of the body (Apache's messageTTL). default: the broker's value
    that `applied=true` falls back to (None: the GET takes no `applied`, as in Apache)."""

    async def get_value(request: web.Request) -> web.Response:
        value = (await _stored(request)).get(field)
        if value is None and default is not None and rest.query_flag(request, "applied"):
            value = await _applied(request, policies.TOPIC_LEVEL_FIELDS[field], default)
        return _answer(value)

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
        value = check(raw)
        if limits is not None:
            limits(value, rest.service(request).config)
        return await _update(request, _set_field(field, value))

    async def remove_value(request: web.Request) -> web.Response:
        return await _update(request, _set_field(field, None))

    routes.get(TOPIC + path)(get_value)
    routes.post(TOPIC + path)(set_value)
    routes.delete(TOPIC + path)(remove_value)


# The broker.conf values `applied=true` answers, in the JSON of the policy.

def _retention(_: broker_config.BrokerConfig, ledger: ml_config.ManagedLedgerConfig) -> Any:
    return {"retentionTimeInMinutes": ledger.retention_time_minutes,
            "retentionSizeInMB": ledger.retention_size_mb}


def _persistence(_: broker_config.BrokerConfig, ledger: ml_config.ManagedLedgerConfig) -> Any:
    flush_s = ledger.cursor_position_flush_seconds
    return {"bookkeeperEnsemble": ledger.ensemble_size,
            "bookkeeperWriteQuorum": ledger.write_quorum,
            "bookkeeperAckQuorum": ledger.ack_quorum,
            "managedLedgerMaxMarkDeleteRate": 1.0 / flush_s if flush_s > 0 else 0.0}


def _dispatch_rate(msg: int, byte: int) -> dict[str, Any]:
    return {"dispatchThrottlingRateInMsg": msg, "dispatchThrottlingRateInByte": byte,
            "ratePeriodInSecond": 1, "relativeToPublishRate": False}


def _inactive(conf: broker_config.BrokerConfig, _: ml_config.ManagedLedgerConfig) -> Any:
    duration = conf.broker_delete_inactive_topics_max_inactive_duration_seconds
    return {"inactiveTopicDeleteMode": conf.broker_delete_inactive_topics_mode,
            "maxInactiveDurationSeconds": (conf.broker_delete_inactive_topics_frequency_seconds
                                           if duration is None else duration),
            "deleteWhileInactive": conf.broker_delete_inactive_topics_enabled}


def _delayed(conf: broker_config.BrokerConfig, _: ml_config.ManagedLedgerConfig) -> Any:
    return {"active": conf.delayed_delivery_enabled,
            "tickTime": conf.delayed_delivery_tick_time_millis, "maxDeliveryDelayInMillis": 0}


def _default_quotas(conf: broker_config.BrokerConfig, _: ml_config.ManagedLedgerConfig) -> Any:
    """backlogQuotaDefault* of the broker, as the one destination_storage quota Apache answers."""
    quota = policies.default_quota(conf)
    return {policies.DESTINATION_STORAGE: {"limitSize": quota.limit_size,
                                           "limitTime": quota.limit_time_s,
                                           "policy": quota.policy}}


_topic_policy("/retention", "retentionPolicies", namespaces.retention_policies,
              default=_retention)
_topic_policy("/messageTTL", "messageTTLInSeconds", namespaces.non_negative_int,
              from_query="messageTTL",
              default=lambda conf, _: conf.ttl_duration_default_in_seconds)
_topic_policy("/maxProducers", "maxProducerPerTopic", namespaces.limit,
              default=lambda conf, _: conf.max_producers_per_topic)
_topic_policy("/maxConsumers", "maxConsumerPerTopic", namespaces.limit,
              default=lambda conf, _: conf.max_consumers_per_topic)
_topic_policy("/maxConsumersPerSubscription", "maxConsumersPerSubscription", namespaces.limit)
_topic_policy("/maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic", namespaces.limit)
_topic_policy("/maxUnackedMessagesOnConsumer", "maxUnackedMessagesOnConsumer", namespaces.limit,
              default=lambda conf, _: conf.max_unacked_messages_per_consumer)
_topic_policy("/maxUnackedMessagesOnSubscription", "maxUnackedMessagesOnSubscription",
              namespaces.limit,
              default=lambda conf, _: conf.max_unacked_messages_per_subscription)
_topic_policy("/publishRate", "publishRate", namespaces.publish_rate)
_topic_policy("/compactionThreshold", "compactionThreshold", namespaces.non_negative_long,
              default=lambda conf, _: conf.broker_service_compaction_threshold_in_bytes)
_topic_policy("/dispatchRate", "dispatchRate", namespaces.dispatch_rate,
              default=lambda conf, _: _dispatch_rate(
                  conf.dispatch_throttling_rate_per_topic_in_msg,
                  conf.dispatch_throttling_rate_per_topic_in_byte))
_topic_policy("/subscriptionDispatchRate", "subscriptionDispatchRate", namespaces.dispatch_rate,
              default=lambda conf, _: _dispatch_rate(
                  conf.dispatch_throttling_rate_per_subscription_in_msg,
                  conf.dispatch_throttling_rate_per_subscription_in_byte))
_topic_policy("/subscribeRate", "subscribeRate", namespaces.subscribe_rate,
              default=lambda conf, _: {
                  "subscribeThrottlingRatePerConsumer": conf.subscribe_throttling_rate_per_consumer,
                  "ratePeriodInSecond": conf.subscribe_rate_period_per_consumer_in_second})
_topic_policy("/deduplicationEnabled", "deduplicationEnabled", namespaces.boolean,
              default=lambda conf, _: conf.broker_deduplication_enabled)
_topic_policy("/persistence", "persistence", namespaces.persistence,
              limits=namespaces.persistence_limits, default=_persistence)
_topic_policy("/inactiveTopicPolicies", "inactiveTopicPolicies",
              namespaces.inactive_topic_policies, default=_inactive)
_topic_policy("/autoSubscriptionCreation", "autoSubscriptionCreationOverride",
              namespaces.auto_subscription_creation,
              default=lambda conf, _: {
                  "allowAutoSubscriptionCreation": conf.allow_auto_subscription_creation})


# Delayed delivery: Apache's TopicPolicies keeps it as two fields (delayedDeliveryEnabled,
# delayedDeliveryTickTimeMillis); the REST body is a DelayedDeliveryPolicies.

DELAYED_PATH = TOPIC + "/delayedDelivery"


@routes.get(DELAYED_PATH)
async def get_delayed_delivery(request: web.Request) -> web.Response:
    stored = await _stored(request)
    active, tick = stored.get("delayedDeliveryEnabled"), stored.get("delayedDeliveryTickTimeMillis")
    value: Any = None
    if active is not None and tick is not None:
        value = {"active": active, "tickTime": tick, "maxDeliveryDelayInMillis": 0}
    elif rest.query_flag(request, "applied"):
        value = await _applied(request, "delayed_delivery_policies", _delayed)
    return _answer(value)


@routes.post(DELAYED_PATH)
async def set_delayed_delivery(request: web.Request) -> web.Response:
    body = namespaces.delayed_delivery(await rest.body_json(request))

    def change(stored: dict[str, Any]) -> None:
        stored["delayedDeliveryEnabled"] = body["active"]
        stored["delayedDeliveryTickTimeMillis"] = body["tickTime"]

    return await _update(request, change)


@routes.delete(DELAYED_PATH)
async def remove_delayed_delivery(request: web.Request) -> web.Response:
    def change(stored: dict[str, Any]) -> None:
        for field in policies.TOPIC_DELAYED_FIELDS:
            stored.pop(field, None)

    return await _update(request, change)


# Backlog quotas: one per type in TopicPolicies' backLogQuotaMap; GET answers the map ({} when
# the topic has none), as Apache.

@routes.get(TOPIC + "/backlogQuotaMap")
async def get_backlog_quota_map(request: web.Request) -> web.Response:
    quotas: Mapping[str, Any] = (await _stored(request)).get(policies.TOPIC_BACKLOG_QUOTAS) or {}
    if not quotas and rest.query_flag(request, "applied"):
        quotas = await _applied(request, "backlog_quota_map", _default_quotas)
    return rest.ok_json(quotas)


@routes.post(TOPIC + "/backlogQuota")
async def set_backlog_quota(request: web.Request) -> web.Response:
    quota_type = namespaces.backlog_quota_type(request)
    quota = namespaces.backlog_quota(await rest.body_json(request))

    def change(stored: dict[str, Any]) -> None:
        stored[policies.TOPIC_BACKLOG_QUOTAS] = {
            **(stored.get(policies.TOPIC_BACKLOG_QUOTAS) or {}), quota_type: quota}

    return await _update(request, change)


@routes.delete(TOPIC + "/backlogQuota")
async def remove_backlog_quota(request: web.Request) -> web.Response:
    quota_type = namespaces.backlog_quota_type(request)

    def change(stored: dict[str, Any]) -> None:
        quotas = dict(stored.get(policies.TOPIC_BACKLOG_QUOTAS) or {})
        quotas.pop(quota_type, None)
        if quotas:
            stored[policies.TOPIC_BACKLOG_QUOTAS] = quotas
        else:
            stored.pop(policies.TOPIC_BACKLOG_QUOTAS, None)

    return await _update(request, change)
