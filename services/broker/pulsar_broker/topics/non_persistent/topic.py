"""A non-persistent topic: in memory only; each message goes to the consumers connected now.

There is no managed ledger. A SEND is answered at once with a message id of
ledger 0 and an entry id counting the topic's messages, after the message was
offered to every subscription (each gives it to one consumer or drops it).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from typing import Any

from pulsar_common import naming
from pulsar_common.wire import entry_info
from pulsar_common.wire import errors as wire_errors

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import Dispatched, SubType
from pulsar_broker.subscriptions.subscription import check_name as check_subscription_name
from pulsar_broker.topics import deduplication, policies, topic_stats
from pulsar_broker.topics.non_persistent.subscription import (
    NonPersistentSubscription,
    not_supported,
)
from pulsar_broker.topics.persistent_topic import Producer
from pulsar_broker.topics.producer_access import AccessMode

log = logging.getLogger(__name__)

#: The ledger id of every message id a non-persistent topic gives out.
LEDGER_ID = 0


class NonPersistentTopic:
    def __init__(self, name: naming.TopicName) -> None:
        self.name = name
        self.producers: dict[int, Producer] = {}
        self.subscriptions: dict[str, NonPersistentSubscription] = {}
        self._producer_ids = itertools.count()
        self._entry_ids = itertools.count(1)
        self.msg_in = 0
        self.bytes_in = 0
        self.closed = False
        #: Never deduplicated: nothing is stored to remember sequence ids by.
        self.deduplication: deduplication.MessageDeduplication | None = None
        self.policies = policies.TopicPolicies()

    def __str__(self) -> str:
        return str(self.name)

    # Producing

    async def add_producer(
        self, name: str, remote_address: str, disconnect: Callable[[], None] | None = None, *,
        access_mode: AccessMode = AccessMode.SHARED, topic_epoch: int | None = None,
        on_queued: Callable[[], None] | None = None,
    ) -> tuple[Producer, int | None]:
        """Every producer is admitted as Shared (no epoch to store without a ledger)."""
        self._check_open()
        producer = Producer(next(self._producer_ids), name, remote_address, disconnect,
                            AccessMode.SHARED)
        self.producers[producer.producer_id] = producer
        return producer, None

    def remove_producer(self, producer: Producer) -> None:
        self.producers.pop(producer.producer_id, None)

    def _check_open(self) -> None:
        if self.closed:
            raise errors.ServiceNotReadyError(f"Topic {self.name} is closing")

    def publish_future(
        self, producer: Producer, data: bytes, num_messages: int
    ) -> asyncio.Future[ml.Position]:
        """Offer the message to every subscription now; the future holds its id."""
        self._check_open()
        position = ml.Position(LEDGER_ID, next(self._entry_ids))
        try:
            info = entry_info.entry_info(data)
        except wire_errors.WireError as exc:
            raise errors.InvalidRequestError(f"Invalid message: {exc}") from exc
        item = Dispatched(ml.Entry(position, data), info.num_messages, info.sticky_key)
        for subscription in list(self.subscriptions.values()):
            subscription.publish(item)
        producer.msg_in += num_messages
        producer.bytes_in += len(data)
        self.msg_in += num_messages
        self.bytes_in += len(data)
        published = asyncio.get_running_loop().create_future()
        published.set_result(position)
        return published

    # Subscribing

    async def subscribe(
        self,
        name: str,
        sub_type: SubType,
        durable: bool,
        initial_position: ml.InitialPosition,
        start_message_id: ml.Position | None,
        start_inclusive: bool,
        read_compacted: bool = False,
    ) -> NonPersistentSubscription:
        """Durable or not, a subscription lives while it has consumers (as Apache's)."""
        check_subscription_name(name)
        self._check_open()
        if read_compacted:
            raise errors.NotAllowedError("readCompacted only valid on persistent topics")
        existing = self.subscriptions.get(name)
        if existing is not None:
            return existing
        subscription = NonPersistentSubscription(str(self.name), name, sub_type,
                                                 self.name.partition_index)
        self.subscriptions[name] = subscription
        return subscription

    async def remove_subscription_if_idle(self, subscription: NonPersistentSubscription) -> None:
        if not subscription.consumers and self.subscriptions.get(subscription.name) is subscription:
            del self.subscriptions[subscription.name]

    async def unsubscribe(self, name: str, force: bool = False) -> None:
        subscription = self.subscriptions.get(name)
        if subscription is None:
            raise errors.NotFoundError("Subscription not found")
        if subscription.consumers and not force:
            raise errors.PreconditionFailedError("Subscription has active connected consumers")
        del self.subscriptions[name]
        await subscription.close()

    async def last_entry(self, cursor: Any) -> tuple[ml.Position, bytes | None]:
        raise not_supported("GetLastMessageId")

    # Lifecycle

    async def close(self) -> None:
        """Unload: clients are told to reconnect; whatever was in flight is gone."""
        self.closed = True
        for producer in list(self.producers.values()):
            if producer.disconnect is not None:
                producer.disconnect()
        self.producers.clear()
        for subscription in list(self.subscriptions.values()):
            await subscription.close()
        self.subscriptions.clear()

    async def delete(self, force: bool = False) -> None:
        if not force and (self.producers or any(s.consumers for s in self.subscriptions.values())):
            raise errors.PreconditionFailedError("Topic has active producers/subscriptions")
        await self.close()

    # Stats

    def stats(self) -> topic_stats.NonPersistentTopicStats:
        return topic_stats.NonPersistentTopicStats(
            msg_in=self.msg_in,
            bytes_in=self.bytes_in,
            publishers=tuple(
                topic_stats.PublisherStats(
                    producer_id=p.producer_id, producer_name=p.name, msg_in=p.msg_in,
                    bytes_in=p.bytes_in, address=p.remote_address)
                for p in self.producers.values()),
            subscriptions={name: s.stats() for name, s in self.subscriptions.items()},
        )
