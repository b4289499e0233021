"""Loads, creates and removes topics; answers partitioned-metadata and lookup questions.

Topics are loaded once per name (concurrent requests share the load) and kept
until they are deleted, unloaded or the broker stops. A topic is loaded only
while this broker owns its namespace bundle (see pulsar_broker.namespace).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
import re
from collections.abc import Iterable
from typing import Any

from pulsar_bookie.client import api as client_api
from pulsar_common import naming

from pulsar_broker import config as broker_config
from pulsar_broker import errors, resources
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.namespace import bundles as namespace_bundles
from pulsar_broker.namespace import forwarding
from pulsar_broker.namespace.bundles import NamespaceBundle
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_broker.namespace.service import NamespaceService
from pulsar_broker.schema.registry import SchemaRegistry
from pulsar_broker.service import connections
from pulsar_broker.subscriptions import dispatch_rate
from pulsar_broker.topics import telemetry
from pulsar_broker.topics.compaction import compactor
from pulsar_broker.topics.non_persistent.registry import NonPersistentTopics
from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic
from pulsar_broker.topics.persistent_topic import PersistentTopic, is_system_topic
from pulsar_broker.topics.policy_enforcer import PolicyEnforcer

log = logging.getLogger(__name__)

#: Topics closed concurrently when the broker stops: enough for their cursor flushes and
#: ledger closes to share commits, few enough not to flood the bookie.
TOPICS_CLOSED_AT_ONCE = 64

#: Apache's answer when a namespace holds maxTopicsPerNamespace topics already.
TOO_MANY_TOPICS = "Exceed maximum number of topics in namespace."


class TooManyTopicsError(errors.NotAllowedError):
    """maxTopicsPerNamespace reached: NotAllowed to binary-protocol clients (as Apache's
    broker answers a producer or consumer that would create a topic), 412 to the admin API."""

    http_status = 412


class BrokerService:
    def __init__(
        self,
        config: broker_config.BrokerConfig,
        pulsar_resources: resources.PulsarResources,
        ledger_factory: ml.ManagedLedgerFactory,
        ledger_client: client_api.LedgerClient | None = None,
        *,
        broker_http: forwarding.BrokerHttp,
    ) -> None:
        self.config = config
        #: Used to show ledger metadata (internalStats?metadata=true) to readers such as Spark.
        self.ledger_client = ledger_client
        self.resources = pulsar_resources
        self.ledger_factory = ledger_factory
        self._topics: dict[str, asyncio.Future[PersistentTopic]] = {}
        #: non-persistent:// topics, in memory only.
        self.non_persistent = NonPersistentTopics()
        self._producer_names = 0
        web_port = config.web_service_port or config.web_service_port_tls
        self.broker_id = f"{config.advertised_address}:{web_port}"
        urls = config.service_urls()
        self.namespaces = NamespaceService(
            pulsar_resources,
            BrokerUrls(self.broker_service_url, self.web_service_url, config.listeners,
                       urls.broker_service_url_tls, urls.web_service_url_tls),
            broker_id=self.broker_id, cluster=config.cluster_name, version=broker_version(),
            http=broker_http)
        self.namespaces.on_bundles_lost = self._unload_topics_of
        #: The topics' schemas, stored in the metadata store.
        self.schemas = SchemaRegistry(pulsar_resources.store)
        #: Applies namespace policies (retention, persistence, TTL, backlog quotas) to topics.
        self.policies = PolicyEnforcer(config, ledger_factory.default_config, pulsar_resources,
                                       lambda: self.loaded_topics, delete_topic=self.delete_topic)
        #: Handed to every topic loaded; whoever serves /metrics adds its recorder here.
        self.telemetry = telemetry.Recorders()
        #: dispatchThrottlingRateInMsg/InByte: one limiter every dispatcher of every topic
        #: obeys beside its topic's and its own; read from the settings at each use, so a
        #: dynamic change applies at once.
        self.dispatch_slot = dispatch_rate.RateSlot(
            lambda _now_s: dispatch_rate.broker_rate(self.config.dispatch_throttling_rate_in_msg,
                                                     self.config.dispatch_throttling_rate_in_byte))
        #: The binary-protocol connections of every listener: their limits and counts.
        self.connections = connections.BrokerConnections(config.broker_max_connections,
                                                         config.broker_max_connections_per_ip)

    async def start(self) -> None:
        """Register as a live broker (bundles can be assigned to it from now on)."""
        await self.namespaces.start()
        self.policies.start()

    @property
    def broker_service_url(self) -> str:
        """The internal listener's URL when advertisedListeners is set (as Apache)."""
        internal = self.config.internal_listener
        if internal is not None and internal.broker_service_url is not None:
            return internal.broker_service_url
        return self.config.service_urls().broker_service_url

    @property
    def web_service_url(self) -> str:
        return self.config.service_urls().web_service_url

    def generate_producer_name(self) -> str:
        self._producer_names += 1
        port = self.config.broker_service_port or self.config.broker_service_port_tls
        return f"{self.config.cluster_name}-{port}-{self._producer_names}"

    # Topics

    @property
    def loaded_topics(self) -> list[PersistentTopic]:
        return [f.result() for f in self._topics.values() if f.done() and not f.exception()]

    async def get_topic(self, name: naming.TopicName, create: bool) -> PersistentTopic | None:
        """The loaded topic; loads it when it exists, creates it when create is allowed."""
        key = str(name)
        future = self._topics.get(key)
        if future is not None:
            return await asyncio.shield(future)
        if not name.persistent:
            raise errors.NotAllowedError(f"{name} is a non-persistent topic")
        exists = await self.ledger_factory.exists(name.persistence_name)
        if not exists:
            if not create or not await self.may_create_topic(name):
                return None
            if not await self._partition_of_partitioned_topic(name):
                # A partition was counted with its partitioned topic.
                await self.check_topics_limit(name, 1)
        await self.namespaces.check_ownership(name)
        future = self._topics.get(key)
        if future is not None:
            return await asyncio.shield(future)
        future = asyncio.get_running_loop().create_future()
        self._topics[key] = future
        try:
            topic = await self._load(name)
        except BaseException as exc:
            self._topics.pop(key, None)
            future.set_exception(exc)
            future.exception()  # Mark retrieved: the caller re-raises it below.
            raise
        future.set_result(topic)
        return topic

    async def get_non_persistent_topic(self, name: naming.TopicName,
                                       create: bool) -> NonPersistentTopic | None:
        """The loaded non-persistent topic; created when create is allowed (auto-creation
        rules as for persistent topics)."""
        topic = self.non_persistent.get(name)
        if topic is not None:
            return topic
        if not create or not await self.may_create_topic(name):
            return None
        await self.namespaces.check_ownership(name)
        return self.non_persistent.create(name)

    async def _load(self, name: naming.TopicName) -> PersistentTopic:
        await self.check_namespace(name.namespace_name)
        topic_policies = await self.policies.policies_of_topic(name)
        ledger_config = self.policies.ledger_config(topic_policies)
        ledger = await self.ledger_factory.open(name.persistence_name, ledger_config)
        topic = PersistentTopic(
            name, ledger, self.config.dispatcher_max_read_batch_size,
            track_redeliveries=self.config.subscription_redelivery_tracker_enabled,
            max_read_bytes=self.config.dispatcher_max_read_size_bytes,
            key_shared_replica_points=self.config.key_shared_replica_points,
            recorder=self.telemetry,
            broker_dispatch=self.dispatch_slot,
            compaction=None if self.ledger_client is None else compactor.TopicCompaction(
                str(name), ledger, self.ledger_client,
                quorum=compactor.LedgerQuorum(ledger_config.ensemble_size,
                                              ledger_config.write_quorum,
                                              ledger_config.ack_quorum),
                retain_null_key=self.config.topic_compaction_retain_null_key),
        )
        self.policies.apply(topic, topic_policies)
        # deduplicationEnabled of the topic, else of its namespace, else the broker's.
        if topic_policies.deduplication_enabled:
            await topic.enable_deduplication()
        else:
            await topic.disable_deduplication()
        await topic.load_durable_subscriptions()
        log.info("loaded topic %s", name)
        return topic

    async def check_namespace(self, ns: naming.NamespaceName) -> None:
        if not await self.resources.namespace_exists(ns):
            raise errors.NotFoundError(f"Namespace {ns} does not exist")

    async def auto_creation_policy(self, ns: naming.NamespaceName) -> dict[str, Any]:
        """Namespace override of allowAutoTopicCreation, else the broker's settings."""
        try:
            override = (await self.resources.get_policies(ns)).get("autoTopicCreationOverride")
        except errors.NotFoundError:
            override = None
        if override:
            return dict(override)
        return {
            "allowAutoTopicCreation": self.config.allow_auto_topic_creation,
            "topicType": self.config.allow_auto_topic_creation_type,
            "defaultNumPartitions": self.config.default_num_partitions,
        }

    async def may_create_topic(self, name: naming.TopicName) -> bool:
        """A partition of an existing partitioned topic may always be created; other
        topics only when auto-creation allows non-partitioned topics."""
        if not await self.resources.namespace_exists(name.namespace_name):
            return False
        index = name.partition_index
        if index >= 0:
            partitions = await self.resources.get_partitions(name.partitioned_topic_name)
            if partitions > 0:
                return index < partitions
        if await self.resources.get_partitions(name) > 0:
            return False
        policy = await self.auto_creation_policy(name.namespace_name)
        return bool(policy["allowAutoTopicCreation"]) and policy["topicType"] == "non-partitioned"

    async def _partition_of_partitioned_topic(self, name: naming.TopicName) -> bool:
        return (name.partition_index >= 0
                and await self.resources.get_partitions(name.partitioned_topic_name) > 0)

    async def max_topics_of(self, ns: naming.NamespaceName) -> int:
        """The namespace's maxTopicsPerNamespace policy, else the broker's (0: no limit)."""
        try:
            stored = (await self.resources.get_policies(ns)).get("max_topics_per_namespace")
        except errors.NotFoundError:
            stored = None
        return self.config.max_topics_per_namespace if stored is None else int(stored)

    async def check_topics_limit(self, name: naming.TopicName, new_topics: int) -> None:
        """Refuse to create new_topics more topics beside name's namespace's existing ones
        past maxTopicsPerNamespace, counted as Apache counts them: persistent topics, each
        partition of a partitioned topic as one, system topics neither counted nor limited."""
        if is_system_topic(name):
            return
        limit = await self.max_topics_of(name.namespace_name)
        if limit <= 0:
            return
        names = await self.topics_of_namespace(name.namespace_name, "PERSISTENT")
        count = sum(1 for text in names if not is_system_topic(naming.TopicName.parse(text)))
        if count + new_topics > limit:
            log.warning("not creating %s (%d topics): namespace %s has %d of its %d topics",
                        name, new_topics, name.namespace_name, count, limit)
            raise TooManyTopicsError(TOO_MANY_TOPICS)

    async def partitioned_metadata(self, name: naming.TopicName, auto_create: bool) -> int:
        """Partition count (0 = not partitioned); may create a partitioned topic when the
        auto-creation policy says topics are created partitioned."""
        partitions = await self.resources.get_partitions(name)
        if partitions or not auto_create or name.partition_index >= 0:
            return partitions
        if not await self.resources.namespace_exists(name.namespace_name):
            raise errors.NotFoundError(f"Namespace {name.namespace_name} does not exist")
        policy = await self.auto_creation_policy(name.namespace_name)
        if (policy["allowAutoTopicCreation"] and policy["topicType"] == "partitioned"
                and not await self.ledger_factory.exists(name.persistence_name)):
            count = int(policy.get("defaultNumPartitions") or 1)
            await self.check_topics_limit(name, count)
            try:
                await self.resources.create_partitioned_topic(name, count)
            except errors.ConflictError:
                pass
            return await self.resources.get_partitions(name)
        return 0

    async def topic_exists(self, name: naming.TopicName) -> bool:
        return str(name) in self._topics or await self.ledger_factory.exists(name.persistence_name)

    async def delete_topic(self, name: naming.TopicName, force: bool = False) -> None:
        topic = await self.get_topic(name, create=False)
        if topic is None:
            raise errors.TopicNotFoundError("Topic not found")
        await topic.delete(force)
        self._topics.pop(str(name), None)

    async def unload_topic(self, name: naming.TopicName) -> None:
        future = self._topics.pop(str(name), None)
        if future is not None and future.done() and not future.exception():
            await future.result().close()

    async def unload_bundle(self, bundle: NamespaceBundle) -> None:
        """Close the bundle's topics (their clients reconnect and look them up again),
        then give the bundle up so any broker may take it."""
        await self._unload_topics_of([bundle])
        await self.namespaces.release(bundle)

    async def _unload_topics_of(self, bundles: list[NamespaceBundle]) -> None:
        # One at a time, unlike the stop: the clients reconnect while the others close, and
        # one that comes back while its topic still closes gets the closing managed ledger
        # from the factory; closing many at once makes each close, and that window, longer.
        for topic in self.loaded_topics:
            if any(_falls_into(topic.name, bundle) for bundle in bundles):
                await self.unload_topic(topic.name)
        await self.non_persistent.close_where(
            lambda name: any(_falls_into(name, bundle) for bundle in bundles))

    async def topics_of_bundle(self, bundle: NamespaceBundle) -> list[naming.TopicName]:
        """Stored topics (and partitions) of the namespace that fall into bundle."""
        names = [naming.TopicName.parse(text)
                 for text in await self.topics_of_namespace(bundle.namespace)]
        return [name for name in names if _falls_into(name, bundle)]

    async def topics_of_namespace(self, ns: naming.NamespaceName, mode: str = "PERSISTENT",
                                  pattern: str | None = None) -> list[str]:
        """Non-partitioned topics and partitions, as the client's regex subscriptions expect."""
        names: set[str] = set()
        if mode in ("PERSISTENT", "ALL"):
            names.update(await self.resources.list_persistent_topics(ns))
            for parent in await self.resources.list_partitioned_topics(ns, "persistent"):
                count = await self.resources.get_partitions(naming.TopicName.parse(parent))
                await _add_partition_names(names, parent, self._listed_partitions(parent, count))
            names.update(str(t.name) for t in self.loaded_topics if t.name.namespace_name == ns)
        if mode in ("NON_PERSISTENT", "ALL"):
            # As Apache: the non-persistent topics active on the broker, and the partitions
            # of the namespace's non-persistent partitioned topics.
            names.update(str(t.name) for t in self.non_persistent.loaded
                         if t.name.namespace_name == ns)
            for parent in await self.resources.list_partitioned_topics(ns, "non-persistent"):
                count = await self.resources.get_partitions(naming.TopicName.parse(parent))
                await _add_partition_names(names, parent, self._listed_partitions(parent, count))
        result = sorted(names)
        if pattern:
            regex = re.compile(pattern if "://" in pattern else f"persistent://{pattern}")
            result = [n for n in result if regex.fullmatch(n)]
        return result

    def _listed_partitions(self, parent: str, count: int) -> int:
        """Partitions of parent to list: a count stored above maxNumPartitionsPerPartitionedTopic
        (before the limit existed) is cut to it, so no listing builds millions of names."""
        highest = self.config.max_num_partitions_per_partitioned_topic
        if highest and count > highest:
            log.warning("partitioned topic %s has %d partitions, more than "
                        "maxNumPartitionsPerPartitionedTopic=%d; listing the first %d",
                        parent, count, highest, highest)
            return highest
        return count

    async def _close_topics(self, topics: Iterable[PersistentTopic]) -> None:
        """Close topics, TOPICS_CLOSED_AT_ONCE at a time (their cursor and ledger writes
        then share the bookie's and the metadata store's commits). Each leaves the map
        when its own close starts, so it is served until then; one no longer in the map
        (deleted or unloaded meanwhile) is left alone. A failure is logged and the others
        still close."""
        pending = iter(list(topics))

        async def close_each() -> None:
            for topic in pending:
                future = self._topics.get(str(topic.name))
                if future is None or not future.done() or future.exception() \
                        or future.result() is not topic:
                    continue
                del self._topics[str(topic.name)]
                try:
                    await topic.close()
                except Exception:
                    log.exception("closing topic %s failed", topic.name)

        await asyncio.gather(*(close_each() for _ in range(TOPICS_CLOSED_AT_ONCE)))

    async def close(self) -> None:
        await self.policies.close()
        await self._close_topics(self.loaded_topics)
        self._topics.clear()
        await self.non_persistent.close_where(lambda _name: True)
        await self.ledger_factory.shutdown()
        await self.namespaces.close()


#: Partition names built between two yields to the event loop while listing a namespace.
_NAMES_PER_YIELD = 1000


async def _add_partition_names(names: set[str], parent: str, count: int) -> None:
    """Add parent's partition names, yielding to the loop between chunks so that a large
    listing never holds up other connections."""
    for start in range(0, count, _NAMES_PER_YIELD):
        names.update(f"{parent}-partition-{i}"
                     for i in range(start, min(count, start + _NAMES_PER_YIELD)))
        await asyncio.sleep(0)


def _falls_into(topic: naming.TopicName, bundle: NamespaceBundle) -> bool:
    """Whether topic belongs to bundle: its namespace's, holding the topic's hash. No
    policies are read: a split only divides a bundle, so a topic that fell into a bundle
    still falls into it by its range."""
    return (topic.namespace_name == bundle.namespace
            and bundle.holds(namespace_bundles.topic_hash(topic)))


def broker_version() -> str:
    """The installed pulsar-py version, as brokers report it."""
    try:
        return importlib.metadata.version("pulsar-py")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
