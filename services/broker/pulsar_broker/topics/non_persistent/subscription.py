"""A subscription of a non-persistent topic: its consumers, and who gets each message.

A message is offered once, when it is published: to the single active
consumer (Exclusive, Failover), round-robin to a consumer with permits
(Shared), or to the owner of its key's hash range (Key_Shared). When that
consumer has no permits (or its connection's buffer is full) the message is
dropped and counted, as Apache's non-persistent dispatchers do. Nothing is
kept for redelivery; acknowledgements only release what the consumer holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import selection, subscription_stats
from pulsar_broker.subscriptions.consumer import Consumer, Dispatched, SubType
from pulsar_broker.subscriptions.subscription import (
    ConsumerBusyError,
    SubscriptionTypeMismatchError,
)
from pulsar_broker.topics import topic_stats
from pulsar_broker.topics.non_persistent import rates


class NonPersistentDispatcher:
    """Picks the consumer of each message; there is no backlog to wake up for."""

    def __init__(self, sub_type: SubType, partition_index: int) -> None:
        self.sub_type = sub_type
        self.partition_index = partition_index
        self.consumers: list[Consumer] = []
        self._ranges: selection.AutoSplitRanges[Consumer] = selection.AutoSplitRanges.empty()
        self._round_robin = 0

    def wake(self) -> None:
        """Permits arrived: nothing waits for them (what could not go out was dropped)."""

    def add_consumer(self, consumer: Consumer) -> None:
        self.consumers.append(consumer)
        if self.sub_type is SubType.KEY_SHARED:
            self._ranges.add(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.consumers.remove(consumer)
            consumer.closed = True
            if self.sub_type is SubType.KEY_SHARED:
                self._ranges.remove(consumer)

    def pick(self, item: Dispatched) -> Consumer | None:
        """The consumer to get this message now, or None: it is dropped."""
        if self.sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
            active = selection.failover_active(self.consumers, self.partition_index)
            return active if active is not None and active.available else None
        if self.sub_type is SubType.KEY_SHARED:
            owner = self._ranges.owner(selection.sticky_key_hash(item.sticky_key))
            return owner if owner is not None and owner.available else None
        count = len(self.consumers)
        for step in range(count):
            consumer = self.consumers[(self._round_robin + step) % count]
            if consumer.available:
                self._round_robin = (self._round_robin + step + 1) % count
                return consumer
        return None


class NonPersistentSubscription:
    durable = False

    def __init__(self, topic_name: str, name: str, sub_type: SubType,
                 partition_index: int) -> None:
        self.topic_name = topic_name
        self.name = name
        self.sub_type = sub_type
        self.dispatcher = NonPersistentDispatcher(sub_type, partition_index)
        self.drops = rates.DropCounter()
        self.msg_out = 0
        self.bytes_out = 0

    @property
    def consumers(self) -> list[Consumer]:
        return self.dispatcher.consumers

    def add_consumer(self, consumer: Consumer) -> None:
        if self.consumers:
            if consumer.sub_type is not self.sub_type:
                raise SubscriptionTypeMismatchError(
                    f"Subscription {self.name} is of type {self.sub_type.name}, "
                    f"not {consumer.sub_type.name}")
            if self.sub_type is SubType.EXCLUSIVE:
                raise ConsumerBusyError(f"Exclusive consumer is already connected to {self.name}")
        elif consumer.sub_type is not self.sub_type:
            self.sub_type = consumer.sub_type
            self.dispatcher = NonPersistentDispatcher(consumer.sub_type,
                                                      self.dispatcher.partition_index)
        self.dispatcher.add_consumer(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        self.dispatcher.remove_consumer(consumer)

    def publish(self, item: Dispatched) -> None:
        consumer = self.dispatcher.pick(item)
        if consumer is None:
            self.drops.add(item.num_messages)
            return
        consumer.send(item, 0)
        # Nothing is redelivered on a non-persistent topic: the consumer holds nothing.
        consumer.acknowledged(item.entry.position)
        self.msg_out += item.num_messages
        self.bytes_out += len(item.entry.data)

    # What the binary protocol asks of every subscription

    async def acknowledge(self, consumer: Consumer, positions: list[ml.Position],
                          cumulative: bool) -> None:
        """Acknowledgements change nothing: the message is gone already."""

    async def acknowledge_batch_indexes(self, consumer: Consumer, position: ml.Position,
                                        ack_set: Sequence[int], cumulative: bool) -> None:
        """As acknowledge."""

    def redeliver(self, consumer: Consumer, positions: list[ml.Position] | None) -> None:
        """Nothing is kept to redeliver."""

    async def close(self) -> None:
        for consumer in list(self.consumers):
            consumer.cnx.send_close_consumer(consumer.consumer_id)
            self.dispatcher.remove_consumer(consumer)

    def stats(self) -> topic_stats.NonPersistentSubscriptionStats:
        return topic_stats.NonPersistentSubscriptionStats(
            sub_type=self.sub_type,
            msg_out=self.msg_out,
            bytes_out=self.bytes_out,
            msg_drop_rate=self.drops.rate(),
            consumers=tuple(
                subscription_stats.ConsumerStats(
                    consumer_name=c.consumer_name, available_permits=c.permits,
                    unacked_messages=c.unacked_messages, msg_out=c.msg_out,
                    bytes_out=c.bytes_out, address=c.cnx.remote_address,
                    priority_level=c.priority_level)
                for c in self.consumers),
        )


def not_supported(what: str) -> errors.NotAllowedError:
    return errors.NotAllowedError(f"{what} is not supported on non-persistent topics")
