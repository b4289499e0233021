"""Finding, creating and fanning out over topics for the admin routes.

Admin creation differs from the binary protocol's: it ignores the
auto-creation policy (an operator asked for this topic explicitly). A
partitioned topic's admin operations apply to each of its partitions; those
served by other brokers are asked of them (web/remote_partitions.py). A
single topic served by another broker is answered with a redirect to that
broker (web/app.py).
"""

from __future__ import annotations

import dataclasses

from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic
from pulsar_broker.topics.persistent_topic import PersistentTopic


class NotAllowedOnPartitionedError(errors.NotAllowedError):
    """Apache answers 405 for operations that only make sense on one partition."""


def check_persistent(name: naming.TopicName) -> None:
    """Operations on what a topic stores (ledgers, cursors, compaction) are refused on a
    non-persistent topic, as Apache answers them (405)."""
    if not name.persistent:
        raise errors.NotAllowedError(f"This operation is not supported on non-persistent topic "
                                     f"{name}")


async def non_persistent(service: BrokerService, name: naming.TopicName) -> NonPersistentTopic:
    """The non-persistent topic loaded on this broker; redirected to the broker serving its
    bundle (BundleOwnedElsewhereError), 404 when it is loaded nowhere."""
    topic = service.non_persistent.get(name)
    if topic is None:
        await service.namespaces.check_ownership(name)
        topic = service.non_persistent.get(name)
    if topic is None:
        raise errors.TopicNotFoundError("Topic not found")
    return topic


async def existing(service: BrokerService, name: naming.TopicName) -> PersistentTopic:
    """The loaded topic, loading it if it exists; 404 Topic not found otherwise."""
    check_persistent(name)
    await service.check_namespace(name.namespace_name)
    topic = await service.get_topic(name, create=False)
    if topic is None:
        raise errors.TopicNotFoundError("Topic not found")
    return topic


async def create(service: BrokerService, name: naming.TopicName) -> PersistentTopic:
    """Create (or load) a non-partitioned topic or a partition, whatever auto-creation says."""
    check_persistent(name)
    await service.check_namespace(name.namespace_name)
    await service.namespaces.check_ownership(name)
    if not await service.ledger_factory.exists(name.persistence_name):
        # The first ledger already follows the persistence policy in force for the topic
        # (its own topic-level value, else the namespace's).
        topic_policies = await service.policies.policies_of_topic(name)
        await service.ledger_factory.open(name.persistence_name,
                                          service.policies.ledger_config(topic_policies))
    topic = await service.get_topic(name, create=False)
    if topic is None:
        raise errors.TopicNotFoundError("Topic not found")
    return topic


async def partitions_of(service: BrokerService, name: naming.TopicName) -> int:
    """Partition count when name is a partitioned topic, else 0."""
    if name.partition_index >= 0:
        return 0
    return await service.resources.get_partitions(name)


@dataclasses.dataclass
class Partitions:
    """The topic itself, or a partitioned topic's partitions: the ones this broker serves
    and the others with the broker that serves each."""

    local: list[PersistentTopic]
    remote: list[tuple[naming.TopicName, BrokerUrls]]


async def fan_out(service: BrokerService, name: naming.TopicName,
                  create_partitions: bool = False) -> Partitions:
    """The topic itself, or every partition of a partitioned topic.

    Partitions that were never used have no managed ledger yet; they are
    created when create_partitions is set and skipped otherwise.
    """
    count = await partitions_of(service, name)
    if count == 0:
        return Partitions([await existing(service, name)], [])
    result = Partitions([], [])
    for index in range(count):
        partition = name.partition(index)
        try:
            if create_partitions:
                result.local.append(await create(service, partition))
            elif await service.topic_exists(partition):
                result.local.append(await existing(service, partition))
        except errors.BundleOwnedElsewhereError as exc:
            result.remote.append((partition, BrokerUrls(exc.owner_native_url, exc.owner_http_url)))
    return result


async def refuse_partitioned(service: BrokerService, name: naming.TopicName, what: str) -> None:
    if await partitions_of(service, name) > 0:
        raise NotAllowedOnPartitionedError(f"{what} on a partitioned topic is not allowed")
