"""Finding, creating and fanning out over topics for the admin routes.

Admin creation differs from the binary protocol's: it ignores the
auto-creation policy (an operator asked for this topic explicitly). A
partitioned topic's admin operations apply to each of its partitions, as long
as this broker serves all of them. A topic served by another broker is
answered with a redirect to that broker (web/app.py).
"""

from __future__ import annotations

from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics.persistent_topic import PersistentTopic


class NotAllowedOnPartitionedError(errors.NotAllowedError):
    """Apache answers 405 for operations that only make sense on one partition."""


def check_persistent(name: naming.TopicName) -> None:
    if not name.persistent:
        raise errors.NotAllowedError("non-persistent topics are not supported yet")


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
        await service.ledger_factory.open(name.persistence_name)
    topic = await service.get_topic(name, create=False)
    if topic is None:
        raise errors.TopicNotFoundError("Topic not found")
    return topic


async def partitions_of(service: BrokerService, name: naming.TopicName) -> int:
    """Partition count when name is a partitioned topic, else 0."""
    if name.partition_index >= 0:
        return 0
    return await service.resources.get_partitions(name)


async def fan_out(service: BrokerService, name: naming.TopicName,
                  create_partitions: bool = False) -> list[PersistentTopic]:
    """The topic itself, or every partition of a partitioned topic.

    Partitions that were never used have no managed ledger yet; they are
    created when create_partitions is set and skipped otherwise.
    """
    count = await partitions_of(service, name)
    if count == 0:
        return [await existing(service, name)]
    topics = []
    try:
        for index in range(count):
            partition = name.partition(index)
            if create_partitions:
                topics.append(await create(service, partition))
            elif await service.topic_exists(partition):
                topics.append(await existing(service, partition))
    except errors.BundleOwnedElsewhereError as exc:
        # Redirecting would send the whole request to one partition's broker, which may
        # not own the others either.
        raise errors.ServiceNotReadyError(
            f"{exc}; this operation on a partitioned topic whose partitions are served by "
            "several brokers is not supported yet: ask for each partition "
            f"({name}-partition-N)") from exc
    return topics


async def refuse_partitioned(service: BrokerService, name: naming.TopicName, what: str) -> None:
    if await partitions_of(service, name) > 0:
        raise NotAllowedOnPartitionedError(f"{what} on a partitioned topic is not allowed")
