"""`/admin/v2/namespaces`: namespaces, their policies and the topics in them.

Policies are stored as Apache's Policies JSON under /admin/policies/<t>/<ns>.
The simple per-policy endpoints (retention, messageTTL, deduplication, ...)
read or change one field of that record; an unset field answers 204 No
Content, as Apache's JAX-RS resources do for a null value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web
from pulsar_common import naming

from pulsar_broker import config as broker_config
from pulsar_broker import errors, resources
from pulsar_broker.config import BrokerConfig
from pulsar_broker.schema import compatibility
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics import persistent_topic
from pulsar_broker.web import rest

routes = web.RouteTableDef()

NS = "/admin/v2/namespaces/{tenant}/{namespace}"

TOPIC_TYPES = ("partitioned", "non-partitioned")
COMPATIBILITY_STRATEGIES = ("UNDEFINED", *compatibility.STRATEGIES)
BACKLOG_QUOTA_TYPES = ("destination_storage", "message_age")


def initial_policies(body: Any, cluster: str) -> dict[str, Any]:
    """Policies for a new namespace: defaults, overridden by what the request carries."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("Policies must be a JSON object")
    bundles = body.get("bundles") or {}
    if not isinstance(bundles, dict):
        raise errors.InvalidRequestError("bundles must be a JSON object")
    count = rest.java_int(bundles.get("numBundles") or resources.DEFAULT_BUNDLES, "numBundles")
    if count <= 0:
        raise errors.PreconditionFailedError("Invalid number of bundles")
    policies = resources.default_policies(count)
    policies.update({k: v for k, v in body.items() if k != "bundles"})
    if bundles.get("boundaries"):
        policies["bundles"] = {"boundaries": list(bundles["boundaries"]),
                               "numBundles": len(bundles["boundaries"]) - 1}
    if not policies.get("replication_clusters"):
        policies["replication_clusters"] = [cluster]
    return policies


@routes.get("/admin/v2/namespaces/{tenant}")
async def list_namespaces(request: web.Request) -> web.Response:
    tenant = rest.check_name(request.match_info["tenant"], "Tenant")
    pulsar = rest.service(request).resources
    if not await pulsar.tenant_exists(tenant):
        raise errors.NotFoundError("Tenant does not exist")
    return rest.ok_json(await pulsar.list_namespaces(tenant))


@routes.put(NS)
async def create_namespace(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    service = rest.service(request)
    policies = initial_policies(await rest.body_json(request), service.config.cluster_name)
    await service.resources.create_namespace(ns, policies)
    return rest.no_content()


@routes.get(NS)
async def get_policies(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    return rest.ok_json(await rest.service(request).resources.get_policies(ns))


async def remove_namespace(service: BrokerService, ns: naming.NamespaceName, force: bool) -> None:
    """Delete a namespace; with force, its topics first (409 without force when it has any)."""
    await service.check_namespace(ns)
    topics = await service.topics_of_namespace(ns, "ALL")
    partitioned = await service.resources.list_partitioned_topics(ns, "persistent")
    if (topics or partitioned) and not force:
        raise errors.ConflictError("Cannot delete non empty namespace")
    for topic in topics:
        try:
            await service.delete_topic(naming.TopicName.parse(topic), force=True)
        except errors.NotFoundError:
            pass
    await service.resources.delete_namespace(ns)


@routes.delete(NS)
async def delete_namespace(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    await remove_namespace(rest.service(request), ns, rest.query_flag(request, "force"))
    return rest.no_content()


@routes.get(NS + "/bundles")
async def get_bundles(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    policies = await rest.service(request).resources.get_policies(ns)
    return rest.ok_json(policies.get("bundles") or {})


@routes.get(NS + "/topics")
async def namespace_topics(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    service = rest.service(request)
    mode = request.query.get("mode", "PERSISTENT").upper()
    if mode not in ("PERSISTENT", "NON_PERSISTENT", "ALL"):
        raise errors.InvalidRequestError(f"Invalid mode {mode}")
    await service.check_namespace(ns)
    names = await service.topics_of_namespace(ns, mode)
    if not rest.query_flag(request, "includeSystemTopic"):
        # As Apache: the broker's own topics only when asked for.
        names = [n for n in names
                 if not persistent_topic.is_system_topic(naming.TopicName.parse(n))]
    return rest.ok_json(names)


# One field of the Policies record per endpoint.

async def _update_policies(request: web.Request,
                           change: Callable[[dict[str, Any]], None]) -> web.Response:
    """Change the stored record, then apply it to the namespace's topics loaded here (other
    brokers see the change through their watch on the store)."""
    ns = rest.namespace_name(request)
    service = rest.service(request)
    policies = await service.resources.get_policies(ns)
    change(policies)
    await service.resources.set_policies(ns, policies)
    await service.policies.namespace_changed(ns)
    return rest.no_content()


async def _policy_value(request: web.Request, field: str, unset: Any) -> web.Response:
    ns = rest.namespace_name(request)
    value = (await rest.service(request).resources.get_policies(ns)).get(field)
    if value is None or value == "UNDEFINED":
        value = unset
    return rest.no_content() if value is None else rest.ok_json(value)


def _simple_policy(path: str, field: str, check: Callable[[Any], Any],
                   methods: tuple[str, ...] = ("POST",), unset: Any = None,
                   limits: Callable[[Any, BrokerConfig], None] | None = None) -> None:
    """GET, set (POST and/or PUT) and DELETE of one Policies field; GET gives unset when unset.
    limits checks a value against the broker's settings."""

    async def get_value(request: web.Request) -> web.Response:
        return await _policy_value(request, field, unset)

    async def set_value(request: web.Request) -> web.Response:
        value = check(await rest.body_json(request))
        if limits is not None:
            limits(value, rest.service(request).config)
        return await _update_policies(request, lambda p: p.__setitem__(field, value))

    async def remove_value(request: web.Request) -> web.Response:
        return await _update_policies(request, lambda p: p.__setitem__(field, None))

    routes.get(NS + path)(get_value)
    for method in methods:
        routes.route(method, NS + path)(set_value)
    routes.delete(NS + path)(remove_value)


def retention_policies(body: Any) -> dict[str, int]:
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("Retention policies must be a JSON object")
    minutes = rest.java_int(body.get("retentionTimeInMinutes", 0), "retentionTimeInMinutes")
    size_mb = rest.java_int(body.get("retentionSizeInMB", 0), "retentionSizeInMB",
                            rest.JAVA_LONG_MAX)
    if minutes < -1 or size_mb < -1:
        raise errors.PreconditionFailedError("Retention values must be -1 (infinite) or more")
    if (minutes == 0) != (size_mb == 0):
        # As Apache: a single 0 would delete consumed ledgers at once despite the other limit.
        raise errors.InvalidRequestError(
            "Invalid retention policy: a time or size limit of 0 is only valid with the other "
            "also 0 (no retention); use -1 to leave one limit out")
    return {"retentionTimeInMinutes": minutes, "retentionSizeInMB": size_mb}


def non_negative_int(body: Any) -> int:
    """An int field (message TTL in seconds): a Java int (400 otherwise), not negative (412)."""
    value = rest.java_int(body, "Value")
    if value < 0:
        raise errors.PreconditionFailedError("Invalid value: must be a non-negative integer")
    return value


def non_negative_long(body: Any) -> int:
    """A long field (compaction threshold in bytes): 400 beyond a Java long, 412 negative."""
    value = rest.java_int(body, "Value", rest.JAVA_LONG_MAX)
    if value < 0:
        raise errors.PreconditionFailedError("Invalid value: must be a non-negative integer")
    return value


def named_limit(name: str, message: str = "{name} must be 0 or more",
                highest: int = rest.JAVA_INT_MAX) -> Callable[[Any], int]:
    """As limit, refused (412) with the message Apache's namespace resource gives for name."""
    def check(body: Any) -> int:
        value = rest.java_int(body, name, highest)
        if value < 0:
            raise errors.PreconditionFailedError(message.format(name=name))
        return value
    return check


def delayed_delivery(body: Any) -> dict[str, Any]:
    """Apache's DelayedDeliveryPolicies: active, tickTime (ms) and maxDeliveryDelayInMillis,
    which is refused when set (no limit on delays is enforced yet)."""
    if not isinstance(body, dict) or not isinstance(body.get("active", True), bool):
        raise errors.InvalidRequestError("Delayed delivery policies need a boolean 'active'")
    tick = rest.java_int(body.get("tickTime", 1000), "tickTime", rest.JAVA_LONG_MAX)
    if tick <= 0:
        raise errors.InvalidRequestError("tickTime must be a positive number of milliseconds")
    if body.get("maxDeliveryDelayInMillis"):
        raise errors.InvalidRequestError("maxDeliveryDelayInMillis is not supported yet")
    return {"active": body.get("active", True), "tickTime": tick,
            "maxDeliveryDelayInMillis": 0}


def boolean(body: Any) -> bool:
    if not isinstance(body, bool):
        raise errors.InvalidRequestError("Value must be true or false")
    return body


def _auto_topic_creation(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("allowAutoTopicCreation"), bool):
        raise errors.InvalidRequestError("Invalid configuration for autoTopicCreationOverride")
    topic_type = body.get("topicType", "non-partitioned")
    if topic_type not in TOPIC_TYPES:
        raise errors.InvalidRequestError(
            f"Invalid configuration for autoTopicCreationOverride: unknown topicType {topic_type}")
    override: dict[str, Any] = {"allowAutoTopicCreation": body["allowAutoTopicCreation"],
                                "topicType": topic_type}
    if topic_type == "partitioned":
        partitions = rest.java_int(body.get("defaultNumPartitions"), "defaultNumPartitions")
        if partitions <= 0:
            raise errors.InvalidRequestError(
                "Invalid configuration for autoTopicCreationOverride: "
                "defaultNumPartitions must be positive for partitioned topics")
        override["defaultNumPartitions"] = partitions
    return override


def _auto_topic_creation_limits(value: dict[str, Any], conf: BrokerConfig) -> None:
    highest = conf.max_num_partitions_per_partitioned_topic
    if highest and value.get("defaultNumPartitions", 0) > highest:
        raise rest.NotAcceptableError(
            f"Number of partitions should be less than or equal to {highest}")


def persistence(body: Any) -> dict[str, Any]:
    """PersistencePolicies: ack quorum <= write quorum <= ensemble, all at least 1."""
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("Persistence policies must be a JSON object")
    try:
        ensemble = int(body["bookkeeperEnsemble"])
        write_quorum = int(body["bookkeeperWriteQuorum"])
        ack_quorum = int(body["bookkeeperAckQuorum"])
        mark_delete_rate = float(body.get("managedLedgerMaxMarkDeleteRate", 0.0))
    except (KeyError, TypeError, ValueError) as exc:
        raise errors.InvalidRequestError(
            "Persistence policies need bookkeeperEnsemble, bookkeeperWriteQuorum and "
            "bookkeeperAckQuorum") from exc
    if not 1 <= ack_quorum <= write_quorum <= ensemble:
        raise errors.InvalidRequestError(
            f"Bookkeeper Ensemble ({ensemble}) >= WriteQuorum ({write_quorum}) >= "
            f"AckQuorum ({ack_quorum}) >= 1 must hold")
    return {"bookkeeperEnsemble": ensemble, "bookkeeperWriteQuorum": write_quorum,
            "bookkeeperAckQuorum": ack_quorum, "managedLedgerMaxMarkDeleteRate": mark_delete_rate}


def persistence_limits(value: dict[str, Any], conf: BrokerConfig) -> None:
    """The broker's managedLedgerMax* settings bound what a namespace may ask for."""
    bounds = [("bookkeeperEnsemble", "Bookkeeper-Ensemble", conf.managed_ledger_max_ensemble_size),
              ("bookkeeperWriteQuorum", "Bookkeeper-WriteQuorum",
               conf.managed_ledger_max_write_quorum),
              ("bookkeeperAckQuorum", "Bookkeeper-AckQuorum", conf.managed_ledger_max_ack_quorum)]
    for field, label, highest in bounds:
        if value[field] > highest:
            raise errors.InvalidRequestError(f"{label} must be <= {highest}")


def _compatibility(body: Any) -> str:
    if not isinstance(body, str) or body.upper() not in COMPATIBILITY_STRATEGIES:
        raise errors.InvalidRequestError(f"Invalid schema compatibility strategy {body!r}")
    return body.upper()


SCHEMA_AUTO_UPDATE_STRATEGIES = ("AutoUpdateDisabled", "Backward", "Forward", "Full",
                                 "AlwaysCompatible", "BackwardTransitive", "ForwardTransitive",
                                 "FullTransitive")
SUBSCRIPTION_TYPES = broker_config.SUBSCRIPTION_TYPES


def _choice(body: Any, choices: tuple[str, ...], what: str) -> str:
    if body not in choices:
        raise errors.InvalidRequestError(f"Invalid {what} {body!r}: must be one of "
                                         + ", ".join(choices))
    return str(body)


def subscription_types(body: Any) -> list[str]:
    """A JSON list of subscription type names (Apache's SubscriptionType), kept sorted."""
    if not isinstance(body, list):
        raise errors.InvalidRequestError("Subscription types must be a JSON list")
    return sorted({_choice(t, SUBSCRIPTION_TYPES, "subscription type") for t in body})


def _clusters(body: Any) -> list[str]:
    if not isinstance(body, list) or not all(isinstance(c, str) for c in body):
        raise errors.InvalidRequestError("Replication clusters must be a list of names")
    return body


_simple_policy("/retention", "retention_policies", retention_policies)
_simple_policy("/messageTTL", "message_ttl_in_seconds", non_negative_int)
_simple_policy("/compactionThreshold", "compaction_threshold",
               named_limit("compactionThreshold", highest=rest.JAVA_LONG_MAX), ("PUT",))
_simple_policy("/deduplication", "deduplicationEnabled", boolean)
_simple_policy("/persistence", "persistence", persistence, limits=persistence_limits)
_simple_policy("/autoTopicCreation", "autoTopicCreationOverride", _auto_topic_creation,
               limits=_auto_topic_creation_limits)
_simple_policy("/delayedDelivery", "delayed_delivery_policies", delayed_delivery)
# Like Apache's, an undefined strategy reads as the default, FULL.
_simple_policy("/schemaCompatibilityStrategy", "schema_compatibility_strategy", _compatibility,
               ("PUT", "POST"), unset="FULL")
# Apache's older per-namespace setting, answered Full when unset; no DELETE in Apache.
_simple_policy("/schemaAutoUpdateCompatibilityStrategy", "schema_auto_update_compatibility_strategy",
               lambda body: _choice(body, SCHEMA_AUTO_UPDATE_STRATEGIES, "strategy"), ("PUT",),
               unset="Full")
_simple_policy("/subscriptionTypesEnabled", "subscription_types_enabled", subscription_types,
               unset=[])


@routes.get(NS + "/isAllowAutoUpdateSchema")
async def get_is_allow_auto_update_schema(request: web.Request) -> web.Response:
    """Unset, it answers broker.conf's isAllowAutoUpdateSchemaEnabled, as Apache does."""
    ns = rest.namespace_name(request)
    service = rest.service(request)
    allowed = (await service.resources.get_policies(ns)).get("is_allow_auto_update_schema")
    if allowed is None:
        allowed = service.config.is_allow_auto_update_schema_enabled
    return rest.ok_json(bool(allowed))


@routes.post(NS + "/isAllowAutoUpdateSchema")
async def set_is_allow_auto_update_schema(request: web.Request) -> web.Response:
    value = boolean(await rest.body_json(request))
    return await _update_policies(
        request, lambda p: p.__setitem__("is_allow_auto_update_schema", value))


@routes.get(NS + "/schemaValidationEnforced")
async def get_schema_validation_enforced(request: web.Request) -> web.Response:
    """With applied=true, an unset (or false) value answers broker.conf's
    isSchemaValidationEnforced, as Apache does."""
    ns = rest.namespace_name(request)
    service = rest.service(request)
    enforced = bool((await service.resources.get_policies(ns)).get("schema_validation_enforced"))
    if not enforced and rest.query_flag(request, "applied"):
        enforced = service.config.is_schema_validation_enforced
    return rest.ok_json(enforced)


@routes.post(NS + "/schemaValidationEnforced")
async def set_schema_validation_enforced(request: web.Request) -> web.Response:
    value = boolean(await rest.body_json(request))
    return await _update_policies(
        request, lambda p: p.__setitem__("schema_validation_enforced", value))


# Limits and rates: stored and served as Apache's admin API does. Which of them the broker
# enforces is listed in docs/compatibility.md.

def limit(body: Any) -> int:
    """A count limit (max producers per topic, ...): a Java int, 0 or more (0: no limit)."""
    value = rest.java_int(body, "Value")
    if value < 0:
        raise errors.PreconditionFailedError("Invalid value: must be 0 (no limit) or more")
    return value


def _rate_fields(body: Any, fields: dict[str, tuple[int, int]], what: str) -> dict[str, Any]:
    """A rate record: each field a number (Java int or long), -1 or less meaning unlimited."""
    if not isinstance(body, dict):
        raise errors.InvalidRequestError(f"{what} must be a JSON object")
    unknown = set(body) - set(fields) - {"relativeToPublishRate"}
    if unknown:
        raise errors.InvalidRequestError(f"{what}: unknown fields {', '.join(sorted(unknown))}")
    record: dict[str, Any] = {
        name: rest.java_int(body.get(name, default), name, highest)
        for name, (default, highest) in fields.items()}
    if "relativeToPublishRate" in body:
        if not isinstance(body["relativeToPublishRate"], bool):
            raise errors.InvalidRequestError("relativeToPublishRate must be true or false")
        record["relativeToPublishRate"] = body["relativeToPublishRate"]
    return record


def publish_rate(body: Any) -> dict[str, Any]:
    return _rate_fields(body, {"publishThrottlingRateInMsg": (-1, rest.JAVA_INT_MAX),
                               "publishThrottlingRateInByte": (-1, rest.JAVA_LONG_MAX)},
                        "PublishRate")


def dispatch_rate(body: Any) -> dict[str, Any]:
    record = _rate_fields(body, {"dispatchThrottlingRateInMsg": (-1, rest.JAVA_INT_MAX),
                                 "dispatchThrottlingRateInByte": (-1, rest.JAVA_LONG_MAX),
                                 "ratePeriodInSecond": (1, rest.JAVA_INT_MAX)}, "DispatchRate")
    if record["ratePeriodInSecond"] <= 0:
        raise errors.InvalidRequestError("ratePeriodInSecond must be positive")
    record.setdefault("relativeToPublishRate", False)
    return record


def subscribe_rate(body: Any) -> dict[str, Any]:
    record = _rate_fields(body, {"subscribeThrottlingRatePerConsumer": (-1, rest.JAVA_INT_MAX),
                                 "ratePeriodInSecond": (30, rest.JAVA_INT_MAX)}, "SubscribeRate")
    if record["ratePeriodInSecond"] <= 0:
        raise errors.InvalidRequestError("ratePeriodInSecond must be positive")
    return record


INACTIVE_TOPIC_DELETE_MODES = ("delete_when_no_subscriptions",
                               "delete_when_subscriptions_caught_up")


def inactive_topic_policies(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict) or not isinstance(body.get("deleteWhileInactive"), bool):
        raise errors.InvalidRequestError("InactiveTopicPolicies need a boolean deleteWhileInactive")
    mode = body.get("inactiveTopicDeleteMode", INACTIVE_TOPIC_DELETE_MODES[0])
    if mode not in INACTIVE_TOPIC_DELETE_MODES:
        raise errors.InvalidRequestError(
            f"inactiveTopicDeleteMode must be one of {', '.join(INACTIVE_TOPIC_DELETE_MODES)}")
    seconds = rest.java_int(body.get("maxInactiveDurationSeconds", 60),
                            "maxInactiveDurationSeconds")
    if seconds <= 0:
        raise errors.PreconditionFailedError("maxInactiveDurationSeconds must be positive")
    return {"inactiveTopicDeleteMode": mode, "maxInactiveDurationSeconds": seconds,
            "deleteWhileInactive": body["deleteWhileInactive"]}


def auto_subscription_creation(body: Any) -> dict[str, bool]:
    if not isinstance(body, dict) or not isinstance(body.get("allowAutoSubscriptionCreation"),
                                                    bool):
        raise errors.InvalidRequestError(
            "Invalid configuration for autoSubscriptionCreationOverride")
    return {"allowAutoSubscriptionCreation": body["allowAutoSubscriptionCreation"]}


SUBSCRIPTION_AUTH_MODES = ("None", "Prefix")


def _subscription_auth_mode(body: Any) -> str:
    if body not in SUBSCRIPTION_AUTH_MODES:
        raise errors.InvalidRequestError(
            f"subscriptionAuthMode must be one of {', '.join(SUBSCRIPTION_AUTH_MODES)}")
    return str(body)


#: Apache's 412 message for a negative value, where it is not "<name> must be 0 or more".
LIMIT_MESSAGES = {
    "/subscriptionExpirationTime": "Invalid value for subscription expiration time",
    "/deduplicationSnapshotInterval": "interval must be greater than or equal to 0",
}

#: REST path -> the Policies field Apache stores it in.
NAMESPACE_LIMITS = {
    "/maxProducersPerTopic": "max_producers_per_topic",
    "/maxConsumersPerTopic": "max_consumers_per_topic",
    "/maxConsumersPerSubscription": "max_consumers_per_subscription",
    "/maxUnackedMessagesPerConsumer": "max_unacked_messages_per_consumer",
    "/maxUnackedMessagesPerSubscription": "max_unacked_messages_per_subscription",
    "/maxSubscriptionsPerTopic": "max_subscriptions_per_topic",
    "/maxTopicsPerNamespace": "max_topics_per_namespace",
    "/subscriptionExpirationTime": "subscription_expiration_time_minutes",
    "/deduplicationSnapshotInterval": "deduplicationSnapshotIntervalSeconds",
}
for _path, _field in NAMESPACE_LIMITS.items():
    _simple_policy(_path, _field, named_limit(
        _path.lstrip("/"), LIMIT_MESSAGES.get(_path, "{name} must be 0 or more")))
_simple_policy("/publishRate", "publishMaxMessageRate", publish_rate)
_simple_policy("/dispatchRate", "topicDispatchRate", dispatch_rate)
_simple_policy("/subscriptionDispatchRate", "subscriptionDispatchRate", dispatch_rate)
_simple_policy("/subscribeRate", "clusterSubscribeRate", subscribe_rate)
_simple_policy("/inactiveTopicPolicies", "inactive_topic_policies", inactive_topic_policies)
_simple_policy("/autoSubscriptionCreation", "autoSubscriptionCreationOverride",
               auto_subscription_creation)
_simple_policy("/encryptionRequired", "encryption_required", boolean)
_simple_policy("/subscriptionAuthMode", "subscription_auth_mode", _subscription_auth_mode)


@routes.get(NS + "/replication")
async def get_replication(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    policies = await rest.service(request).resources.get_policies(ns)
    return rest.ok_json(policies.get("replication_clusters") or [])


@routes.post(NS + "/replication")
async def set_replication(request: web.Request) -> web.Response:
    clusters = _clusters(await rest.body_json(request))
    known = set(await rest.service(request).resources.list_clusters())
    if any(c not in known for c in clusters):
        raise errors.PreconditionFailedError("Invalid cluster id")
    return await _update_policies(request, lambda p: p.__setitem__("replication_clusters", clusters))


@routes.get(NS + "/backlogQuotaMap")
async def get_backlog_quota_map(request: web.Request) -> web.Response:
    ns = rest.namespace_name(request)
    policies = await rest.service(request).resources.get_policies(ns)
    return rest.ok_json(policies.get("backlog_quota_map") or {})


def backlog_quota_type(request: web.Request) -> str:
    quota_type = request.query.get("backlogQuotaType", "destination_storage")
    if quota_type not in BACKLOG_QUOTA_TYPES:
        raise errors.InvalidRequestError(f"Invalid backlogQuotaType {quota_type}")
    return quota_type


def backlog_quota(body: Any) -> dict[str, Any]:
    """A BacklogQuota body (namespace or topic level): limitSize (bytes, or the older
    `limit`), limitTime (seconds), each -1 for no limit, and the policy applied past it."""
    if not isinstance(body, dict):
        raise errors.InvalidRequestError("Backlog quota must be a JSON object")
    size: Any = body.get("limitSize", body.get("limit", -1))
    quota = {"limitSize": rest.java_int(size, "limitSize", rest.JAVA_LONG_MAX),
             "limitTime": rest.java_int(body.get("limitTime", -1), "limitTime"),
             "policy": str(body.get("policy", broker_config.BACKLOG_QUOTA_POLICIES[0]))}
    if quota["policy"] not in broker_config.BACKLOG_QUOTA_POLICIES:
        raise errors.InvalidRequestError(
            f"Invalid backlog quota policy {quota['policy']!r}: must be one of "
            + ", ".join(broker_config.BACKLOG_QUOTA_POLICIES))
    return quota


@routes.post(NS + "/backlogQuota")
async def set_backlog_quota(request: web.Request) -> web.Response:
    quota_type = backlog_quota_type(request)
    quota = backlog_quota(await rest.body_json(request))

    def change(policies: dict[str, Any]) -> None:
        policies.setdefault("backlog_quota_map", {})
        policies["backlog_quota_map"] = {**(policies["backlog_quota_map"] or {}), quota_type: quota}

    return await _update_policies(request, change)


@routes.delete(NS + "/backlogQuota")
async def remove_backlog_quota(request: web.Request) -> web.Response:
    quota_type = backlog_quota_type(request)

    def change(policies: dict[str, Any]) -> None:
        (policies.get("backlog_quota_map") or {}).pop(quota_type, None)

    return await _update_policies(request, change)
