"""What the broker decides when producers and consumers announce schemas.

Producers (as Apache's AbstractTopic.addSchema): a schema equal to a
registered one gets that version; a new one is registered when the
namespace allows automatic updates and the compatibility strategy accepts
it. A producer without schema may write to a topic with a schema unless
schema validation is enforced.

Consumers (as Apache's addSchemaIfIdleOrCheckCompatible): on an idle topic
without schema (no producers, no data) the consumer's schema is registered;
otherwise it must be able to read the topic's schema.

Settings: the namespace policies `schema_compatibility_strategy`,
`is_allow_auto_update_schema` and `schema_validation_enforced` win over
broker.conf `schemaCompatibilityStrategy`, `isAllowAutoUpdateSchemaEnabled`
and `isSchemaValidationEnforced`.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from pulsar_common import naming

from pulsar_broker import errors as broker_errors
from pulsar_broker.schema import compatibility, errors, records

if TYPE_CHECKING:
    from pulsar_broker.service.broker_service import BrokerService
    from pulsar_broker.topics.persistent_topic import PersistentTopic

@dataclasses.dataclass(frozen=True)
class SchemaPolicy:
    strategy: str
    allow_auto_update: bool
    validation_enforced: bool


async def policy_of(service: BrokerService, ns: naming.NamespaceName) -> SchemaPolicy:
    try:
        policies: dict[str, Any] = await service.resources.get_policies(ns)
    except broker_errors.NotFoundError:
        policies = {}
    conf = service.config
    auto = policies.get("is_allow_auto_update_schema")
    enforced = policies.get("schema_validation_enforced")
    return SchemaPolicy(
        compatibility.resolve_strategy(policies.get("schema_compatibility_strategy"),
                                       conf.schema_compatibility_strategy),
        conf.is_allow_auto_update_schema_enabled if auto is None else bool(auto),
        conf.is_schema_validation_enforced if enforced is None else bool(enforced),
    )


async def for_producer(service: BrokerService, topic: naming.TopicName,
                       schema: records.SchemaData | None) -> int | None:
    """The schema version the producer writes with (None: it writes without schema)."""
    schemas = service.schemas
    policy = await policy_of(service, topic.namespace_name)
    if schema is None:
        if policy.validation_enforced and await schemas.has_schema(topic):
            raise errors.IncompatibleSchemaError(
                "Producers cannot connect or send message without a schema to topics with a "
                "schema if SchemaValidationEnforced is enabled")
        return None
    if policy.allow_auto_update:
        return await schemas.put_if_absent(topic, schema, policy.strategy)
    version = await schemas.existing_version(topic, schema)
    if version is None:
        raise errors.IncompatibleSchemaError(
            "Schema not found and schema auto updating is disabled.")
    return version


async def for_consumer(service: BrokerService, topic: PersistentTopic,
                       schema: records.SchemaData) -> None:
    """Register the consumer's schema on an idle topic without one, else check it."""
    schemas = service.schemas
    policy = await policy_of(service, topic.name.namespace_name)
    idle = (not topic.producers and topic.ledger.total_size == 0
            and not any(s.consumers for s in topic.subscriptions.values()))
    if not idle or await schemas.has_schema(topic.name):
        await schemas.check_consumer(topic.name, schema, policy.strategy)
        return
    await for_producer(service, topic.name, schema)
