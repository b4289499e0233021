"""What a namespace's policies mean for each of its topics: a pure resolution.

Apache stores a namespace's Policies JSON (retention_policies,
message_ttl_in_seconds, backlog_quota_map, persistence, ...); a field left
unset (null) falls back to a broker setting. `resolve` turns that record and
the broker's settings into one TopicPolicies value per namespace, and
`ledger_config` derives the per-topic ManagedLedgerConfig (retention, E/WQ/AQ,
mark-delete rate) from the broker's default one. A topic's own TopicPolicies
record (Apache's field names) goes over its namespace's through
`with_topic_overrides` before `resolve`. Enforcement lives in
policy_enforcer.py.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from pulsar_common import errors as common_errors

from pulsar_broker import config as broker_config
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.subscriptions.delayed_delivery import DelayedDeliverySettings
from pulsar_broker.subscriptions.dispatch_rate import DispatchRate
from pulsar_broker.topics.inactive_topics import InactiveTopicPolicy
from pulsar_broker.topics.publish_rate import PublishRate
from pulsar_broker.topics.subscribe_rate import SubscribeRate

log = logging.getLogger(__name__)

BYTES_IN_GIGABYTE = 1024 * 1024 * 1024

#: Backlog quota types of Apache's backlog_quota_map.
DESTINATION_STORAGE = "destination_storage"
MESSAGE_AGE = "message_age"

HOLD = "producer_request_hold"
EXCEPTION = "producer_exception"
EVICTION = "consumer_backlog_eviction"


@dataclasses.dataclass(frozen=True)
class BacklogQuota:
    """A limit on a topic's backlog and what happens past it (Apache's BacklogQuota)."""

    #: Bytes not yet acknowledged by the slowest subscription; -1: no size limit.
    limit_size: int
    #: Age in seconds of the oldest unacknowledged message; -1: no age limit.
    limit_time_s: int
    policy: str

    @property
    def size_limited(self) -> bool:
        return self.limit_size >= 0

    @property
    def time_limited(self) -> bool:
        return self.limit_time_s >= 0


@dataclasses.dataclass(frozen=True)
class Limits:
    """Admission limits of a topic; 0 means no limit (Apache's max*PerTopic settings)."""

    max_producers: int = 0
    max_consumers: int = 0
    max_consumers_per_subscription: int = 0
    max_subscriptions: int = 0
    #: maxUnackedMessagesPerConsumer of the namespace; None: the broker's setting.
    max_unacked_per_consumer: int | None = None
    #: Messages a Shared/Key_Shared subscription's consumers may hold unacknowledged
    #: together (maxUnackedMessagesPerSubscription; 0: no limit).
    max_unacked_per_subscription: int = 0


@dataclasses.dataclass(frozen=True)
class TopicPolicies:
    """The namespace's policies as they apply to one topic, broker defaults filled in."""

    retention_time_minutes: int = 0
    retention_size_mb: int = 0
    #: None: the broker's managedLedgerDefault* values.
    ensemble_size: int | None = None
    write_quorum: int | None = None
    ack_quorum: int | None = None
    #: Cursor positions persisted at most this often per second (0: the broker's setting).
    max_mark_delete_rate: float = 0.0
    #: Messages older than this are acknowledged for every subscription (0: never).
    message_ttl_s: int = 0
    storage_quota: BacklogQuota = BacklogQuota(-1, -1, HOLD)
    age_quota: BacklogQuota = BacklogQuota(-1, -1, HOLD)
    #: delayed_delivery_policies {active, tickTime} over delayedDelivery* of broker.conf.
    delayed: DelayedDeliverySettings = dataclasses.field(default_factory=DelayedDeliverySettings)
    #: Compact once the compaction backlog holds more bytes than this (0: never automatically).
    compaction_threshold_bytes: int = 0
    limits: Limits = Limits()
    #: publishRate of the namespace, else maxPublishRatePerTopicIn* of the broker.
    publish_rate: PublishRate = dataclasses.field(default_factory=PublishRate)
    #: dispatchRate (the topic's, shared by its subscriptions), else
    #: dispatchThrottlingRatePerTopicIn* of the broker.
    dispatch_rate: DispatchRate = dataclasses.field(default_factory=DispatchRate)
    #: subscriptionDispatchRate (each subscription's own), else
    #: dispatchThrottlingRatePerSubscriptionIn* of the broker.
    subscription_dispatch_rate: DispatchRate = dataclasses.field(
        default_factory=DispatchRate)
    #: subscribeRate, else subscribeThrottlingRatePerConsumer of the broker.
    subscribe_rate: SubscribeRate = dataclasses.field(default_factory=SubscribeRate)
    #: autoSubscriptionCreationOverride, else allowAutoSubscriptionCreation of the broker: may
    #: a consumer create a durable subscription by subscribing to it?
    auto_subscription_creation: bool = True
    #: subscription_expiration_time_minutes, else subscriptionExpirationTimeMinutes of the
    #: broker: a durable subscription without consumers this long is deleted (0: never).
    subscription_expiration_minutes: int = 0
    #: encryption_required: producers must encrypt, and every message must carry its keys.
    encryption_required: bool = False
    #: inactiveTopicPolicies, else brokerDeleteInactiveTopics* of the broker.
    inactive: InactiveTopicPolicy = dataclasses.field(default_factory=InactiveTopicPolicy)
    #: deduplicationEnabled, else brokerDeduplicationEnabled of the broker.
    deduplication_enabled: bool = False
    #: subscription_types_enabled (when it names any), else subscriptionTypesEnabled of the
    #: broker: Apache's names of the subscription types consumers may use.
    subscription_types_enabled: frozenset[str] = frozenset(broker_config.SUBSCRIPTION_TYPES)


#: Apache's TopicPolicies fields this broker applies -> the namespace Policies field they
#: override.
TOPIC_LEVEL_FIELDS: Mapping[str, str] = {
    "retentionPolicies": "retention_policies",
    "messageTTLInSeconds": "message_ttl_in_seconds",
    "maxProducerPerTopic": "max_producers_per_topic",
    "maxConsumerPerTopic": "max_consumers_per_topic",
    "maxConsumersPerSubscription": "max_consumers_per_subscription",
    "maxSubscriptionsPerTopic": "max_subscriptions_per_topic",
    "maxUnackedMessagesOnConsumer": "max_unacked_messages_per_consumer",
    "maxUnackedMessagesOnSubscription": "max_unacked_messages_per_subscription",
    "publishRate": "publishMaxMessageRate",
    "compactionThreshold": "compaction_threshold",
    "dispatchRate": "topicDispatchRate",
    "subscriptionDispatchRate": "subscriptionDispatchRate",
    "subscribeRate": "clusterSubscribeRate",
    "autoSubscriptionCreationOverride": "autoSubscriptionCreationOverride",
    "inactiveTopicPolicies": "inactive_topic_policies",
    "deduplicationEnabled": "deduplicationEnabled",
    "subscriptionTypesEnabled": "subscription_types_enabled",
    "persistence": "persistence",
}

#: The TopicPolicies fields that override a part of a namespace field each: one backlog quota
#: type of the map, one field of the delayed delivery policies.
TOPIC_BACKLOG_QUOTAS = "backLogQuotaMap"
TOPIC_DELAYED_FIELDS: Mapping[str, str] = {
    "delayedDeliveryEnabled": "active",
    "delayedDeliveryTickTimeMillis": "tickTime",
}


def with_topic_overrides(namespace_policies: Mapping[str, Any] | None,
                         topic_policies: Mapping[str, Any] | None) -> dict[str, Any]:
    """The namespace's record with the topic's own values (set, not null) in their place."""
    merged = dict(namespace_policies or {})
    topic_policies = topic_policies or {}
    for topic_field, namespace_field in TOPIC_LEVEL_FIELDS.items():
        value = topic_policies.get(topic_field)
        if value is not None:
            merged[namespace_field] = value
    # As Apache, a topic's quota of one type leaves the namespace's quota of the other type.
    quotas = topic_policies.get(TOPIC_BACKLOG_QUOTAS)
    if quotas:
        merged["backlog_quota_map"] = {**(merged.get("backlog_quota_map") or {}), **quotas}
    delayed = {namespace_field: topic_policies[topic_field]
               for topic_field, namespace_field in TOPIC_DELAYED_FIELDS.items()
               if topic_policies.get(topic_field) is not None}
    if delayed:
        merged["delayed_delivery_policies"] = {
            **(merged.get("delayed_delivery_policies") or {}), **delayed}
    return merged


def resolve(policies: Mapping[str, Any] | None, conf: broker_config.BrokerConfig,
            default_ledger: ml_config.ManagedLedgerConfig) -> TopicPolicies:
    """The namespace's Policies JSON (None when it has none) over the broker's defaults."""
    policies = policies or {}
    retention = policies.get("retention_policies") or {}
    persistence = policies.get("persistence") or {}
    ttl = policies.get("message_ttl_in_seconds")
    quotas = policies.get("backlog_quota_map") or {}
    return TopicPolicies(
        retention_time_minutes=int(retention.get("retentionTimeInMinutes",
                                                 default_ledger.retention_time_minutes)),
        retention_size_mb=int(retention.get("retentionSizeInMB", default_ledger.retention_size_mb)),
        ensemble_size=_optional_int(persistence.get("bookkeeperEnsemble")),
        write_quorum=_optional_int(persistence.get("bookkeeperWriteQuorum")),
        ack_quorum=_optional_int(persistence.get("bookkeeperAckQuorum")),
        max_mark_delete_rate=float(persistence.get("managedLedgerMaxMarkDeleteRate") or 0.0),
        message_ttl_s=int(conf.ttl_duration_default_in_seconds if ttl is None else ttl),
        storage_quota=_quota(quotas.get(DESTINATION_STORAGE), default_quota(conf)),
        age_quota=_quota(quotas.get(MESSAGE_AGE), default_quota(conf)),
        delayed=_delayed(policies.get("delayed_delivery_policies"), conf),
        compaction_threshold_bytes=int(
            conf.broker_service_compaction_threshold_in_bytes
            if policies.get("compaction_threshold") is None else policies["compaction_threshold"]),
        limits=_limits(policies, conf),
        publish_rate=_publish_rate(policies.get("publishMaxMessageRate"), conf),
        dispatch_rate=_dispatch_rate(policies.get("topicDispatchRate"), DispatchRate(
            conf.dispatch_throttling_rate_per_topic_in_msg,
            conf.dispatch_throttling_rate_per_topic_in_byte)),
        subscription_dispatch_rate=_dispatch_rate(policies.get("subscriptionDispatchRate"),
                                                  DispatchRate(
            conf.dispatch_throttling_rate_per_subscription_in_msg,
            conf.dispatch_throttling_rate_per_subscription_in_byte)),
        subscribe_rate=_subscribe_rate(policies.get("clusterSubscribeRate"), conf),
        auto_subscription_creation=_auto_subscription_creation(
            policies.get("autoSubscriptionCreationOverride"), conf),
        subscription_expiration_minutes=int(
            conf.subscription_expiration_time_minutes
            if policies.get("subscription_expiration_time_minutes") is None
            else policies["subscription_expiration_time_minutes"]),
        encryption_required=bool(policies.get("encryption_required") or False),
        inactive=_inactive(policies.get("inactive_topic_policies"), conf),
        deduplication_enabled=bool(conf.broker_deduplication_enabled
                                   if policies.get("deduplicationEnabled") is None
                                   else policies["deduplicationEnabled"]),
        subscription_types_enabled=frozenset(
            policies.get("subscription_types_enabled") or conf.subscription_types_enabled),
    )


def _limits(policies: Mapping[str, Any], conf: broker_config.BrokerConfig) -> Limits:
    def pick(field: str, default: int) -> int:
        value = policies.get(field)
        return default if value is None else int(value)

    unacked = policies.get("max_unacked_messages_per_consumer")
    return Limits(
        max_producers=pick("max_producers_per_topic", conf.max_producers_per_topic),
        max_consumers=pick("max_consumers_per_topic", conf.max_consumers_per_topic),
        max_consumers_per_subscription=pick("max_consumers_per_subscription",
                                            conf.max_consumers_per_subscription),
        max_subscriptions=pick("max_subscriptions_per_topic", conf.max_subscriptions_per_topic),
        max_unacked_per_consumer=None if unacked is None else int(unacked),
        max_unacked_per_subscription=pick("max_unacked_messages_per_subscription",
                                          conf.max_unacked_messages_per_subscription))


def _auto_subscription_creation(stored: Mapping[str, Any] | None,
                                conf: broker_config.BrokerConfig) -> bool:
    allowed = (stored or {}).get("allowAutoSubscriptionCreation")
    return conf.allow_auto_subscription_creation if allowed is None else bool(allowed)


def _inactive(stored: Mapping[str, Any] | None,
              conf: broker_config.BrokerConfig) -> InactiveTopicPolicy:
    if stored:
        return InactiveTopicPolicy(
            bool(stored.get("deleteWhileInactive", False)),
            str(stored.get("inactiveTopicDeleteMode") or conf.broker_delete_inactive_topics_mode),
            int(stored.get("maxInactiveDurationSeconds") or 60))
    duration = conf.broker_delete_inactive_topics_max_inactive_duration_seconds
    return InactiveTopicPolicy(
        conf.broker_delete_inactive_topics_enabled, conf.broker_delete_inactive_topics_mode,
        conf.broker_delete_inactive_topics_frequency_seconds if duration is None else duration)


def _publish_rate(stored: Mapping[str, Any] | None,
                  conf: broker_config.BrokerConfig) -> PublishRate:
    if stored:
        return PublishRate(int(stored.get("publishThrottlingRateInMsg", -1)),
                           int(stored.get("publishThrottlingRateInByte", -1)))
    return PublishRate(conf.max_publish_rate_per_topic_in_messages,
                       conf.max_publish_rate_per_topic_in_bytes)


def _dispatch_rate(stored: Mapping[str, Any] | None, broker_default: DispatchRate) -> DispatchRate:
    """A stored rate that limits something wins; one that limits nothing gives way to the
    broker's default, as in Apache."""
    stored = stored or {}
    rate = DispatchRate(int(stored.get("dispatchThrottlingRateInMsg", -1)),
                        int(stored.get("dispatchThrottlingRateInByte", -1)),
                        int(stored.get("ratePeriodInSecond") or 1),
                        bool(stored.get("relativeToPublishRate", False)))
    return rate if rate.limited else broker_default


def _subscribe_rate(stored: Mapping[str, Any] | None,
                    conf: broker_config.BrokerConfig) -> SubscribeRate:
    stored = stored or {}
    rate = SubscribeRate(int(stored.get("subscribeThrottlingRatePerConsumer", -1)),
                         int(stored.get("ratePeriodInSecond") or 30))
    if rate.limited:
        return rate
    return SubscribeRate(conf.subscribe_throttling_rate_per_consumer,
                         conf.subscribe_rate_period_per_consumer_in_second)


def _delayed(stored: Mapping[str, Any] | None, conf: broker_config.BrokerConfig
             ) -> DelayedDeliverySettings:
    stored = stored or {}
    active = stored.get("active")
    tick = stored.get("tickTime")
    return DelayedDeliverySettings(
        enabled=bool(conf.delayed_delivery_enabled if active is None else active),
        tick_ms=int(conf.delayed_delivery_tick_time_millis if not tick else tick),
        strict=conf.is_delayed_delivery_deliver_at_time_strict)


def default_quota(conf: broker_config.BrokerConfig) -> BacklogQuota:
    """backlogQuotaDefaultLimitGB wins over backlogQuotaDefaultLimitBytes when positive."""
    size = conf.backlog_quota_default_limit_bytes
    if conf.backlog_quota_default_limit_gb > 0:
        size = int(conf.backlog_quota_default_limit_gb * BYTES_IN_GIGABYTE)
    return BacklogQuota(size, conf.backlog_quota_default_limit_second,
                        conf.backlog_quota_default_retention_policy)


def _quota(stored: Mapping[str, Any] | None, default: BacklogQuota) -> BacklogQuota:
    if not stored:
        return default
    size = stored.get("limitSize", stored.get("limit", -1))
    return BacklogQuota(int(-1 if size is None else size), int(stored.get("limitTime", -1)),
                        str(stored.get("policy") or default.policy))


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


def ledger_config(base: ml_config.ManagedLedgerConfig,
                  policies: TopicPolicies) -> ml_config.ManagedLedgerConfig:
    """The broker's managed-ledger settings with the namespace's retention and persistence.

    A persistence record the managed ledger refuses (quorums that do not fit,
    stored before validation existed) leaves the broker's quorums in place.
    """
    flush_s = base.cursor_position_flush_seconds
    if policies.max_mark_delete_rate > 0:
        flush_s = 1.0 / policies.max_mark_delete_rate
    retained = dataclasses.replace(
        base, retention_time_minutes=policies.retention_time_minutes,
        retention_size_mb=policies.retention_size_mb, cursor_position_flush_seconds=flush_s)
    if policies.ensemble_size is None:
        return retained
    try:
        return dataclasses.replace(
            retained, ensemble_size=policies.ensemble_size,
            write_quorum=policies.write_quorum or policies.ensemble_size,
            ack_quorum=policies.ack_quorum or policies.write_quorum or policies.ensemble_size)
    except common_errors.ConfigError as exc:
        log.warning("ignoring the namespace's persistence policies: %s", exc)
        return retained
