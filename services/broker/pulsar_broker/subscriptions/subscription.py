"""A subscription: a cursor on the topic's managed ledger, its consumers and dispatcher.

Acknowledgements move the cursor; negative acknowledgements and closed
consumers hand entries back to the dispatcher, counting redeliveries for
Shared and Key_Shared (the client uses the count for dead-letter topics).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import (
    delayed_delivery,
    dispatch_rate,
    key_shared,
    shared,
    single_active,
    subscription_stats,
)
from pulsar_broker.subscriptions import dispatcher as dispatch
from pulsar_broker.subscriptions.consumer import Consumer, SubType, unacknowledged_in

#: Redelivery counts kept per subscription; the oldest are forgotten past this.
REDELIVERY_TRACKER_MAX = 100_000


class ConsumerBusyError(errors.BrokerError):
    """Exclusive subscription already has a consumer (ServerError ConsumerBusy)."""


class SubscriptionTypeMismatchError(errors.BrokerError):
    """A consumer asked for another type than the subscription's current consumers use."""


#: Names no subscription may have: they could not be addressed in the admin REST paths
#: (a URL path step "." or ".." is resolved away before routing).
_UNADDRESSABLE_NAMES = frozenset({".", ".."})
#: Longest subscription name taken (the metadata store keeps one record per name).
NAME_LENGTH_MAX = 1024


def check_name(name: str) -> None:
    """Refuse a subscription name that is empty, a relative path step, or huge
    (NotAllowedError, which the binary protocol answers as NotAllowed)."""
    if not name.strip():
        raise errors.NotAllowedError("Empty subscription name")
    if name in _UNADDRESSABLE_NAMES:
        raise errors.NotAllowedError(f"Invalid subscription name {name!r}")
    if len(name) > NAME_LENGTH_MAX:
        raise errors.NotAllowedError(
            f"Subscription name longer than {NAME_LENGTH_MAX} characters")


class Subscription:
    def __init__(
        self,
        topic_name: str,
        name: str,
        cursor: ml.ManagedCursor,
        sub_type: SubType,
        partition_index: int,
        max_read_batch: int,
        track_redeliveries: bool = True,
        delayed_settings: delayed_delivery.DelayedDeliverySettings | None = None,
        max_read_bytes: int = dispatch.MAX_READ_BYTES,
        key_shared_replica_points: int = 0,
        throttle: dispatch_rate.DispatchThrottle | None = None,
        max_unacked_messages: int = 0,
    ) -> None:
        self.topic_name = topic_name
        #: maxUnackedMessagesPerSubscription (Shared and Key_Shared only; 0: no limit).
        self.max_unacked_messages = max_unacked_messages
        #: The dispatch rates this subscription's deliveries count against.
        self.throttle = throttle
        self.key_shared_replica_points = key_shared_replica_points
        self.name = name
        self.cursor = cursor
        self.sub_type = sub_type
        self.durable = cursor.durable
        self.track_redeliveries = track_redeliveries and sub_type in (
            SubType.SHARED, SubType.KEY_SHARED)
        self.redelivery_counts: dict[ml.Position, int] = {}
        #: None: Apache's defaults (on, 1 s tick); topics pass their namespace's resolved settings.
        self.delayed_settings = delayed_settings
        self.dispatcher = new_dispatcher(
            cursor, sub_type, partition_index=partition_index, max_read_batch=max_read_batch,
            redelivery_count=self.redelivery_count, on_active_change=self._announce_active,
            delayed_settings=delayed_settings, max_read_bytes=max_read_bytes,
            key_shared_replica_points=key_shared_replica_points, throttle=throttle,
        )
        self.dispatcher.unacked_limit.max_unacked_messages = max_unacked_messages
        self.msg_acked = 0

    @property
    def consumers(self) -> list[Consumer]:
        return self.dispatcher.consumers

    def redelivery_count(self, position: ml.Position) -> int:
        return self.redelivery_counts.get(position, 0)

    def add_consumer(self, consumer: Consumer) -> None:
        if self.consumers:
            if consumer.sub_type is not self.sub_type:
                raise SubscriptionTypeMismatchError(
                    f"Subscription {self.name} is of type {self.sub_type.name}, "
                    f"not {consumer.sub_type.name}")
            if self.sub_type is SubType.EXCLUSIVE:
                raise ConsumerBusyError(f"Exclusive consumer is already connected to {self.name}")
        else:
            self._retype(consumer.sub_type)
        self.dispatcher.add_consumer(consumer)
        if self.sub_type is SubType.FAILOVER:
            self._announce_active(self.dispatcher.active_consumer)

    def _retype(self, sub_type: SubType) -> None:
        if sub_type is self.sub_type:
            return
        old = self.dispatcher
        self.sub_type = sub_type
        self.track_redeliveries = sub_type in (SubType.SHARED, SubType.KEY_SHARED)
        self.dispatcher = new_dispatcher(
            self.cursor, sub_type, partition_index=old.partition_index,
            max_read_batch=old.max_read_batch, redelivery_count=self.redelivery_count,
            on_active_change=self._announce_active, delayed_settings=self.delayed_settings,
            max_read_bytes=old.max_read_bytes,
            key_shared_replica_points=self.key_shared_replica_points, throttle=self.throttle,
        )
        self.dispatcher.unacked_limit.max_unacked_messages = self.max_unacked_messages
        old.retire()
        self.cursor.rewind()

    def update_delayed_settings(self, settings: delayed_delivery.DelayedDeliverySettings) -> None:
        self.delayed_settings = settings
        self.dispatcher.update_delayed_settings(settings)

    def update_max_unacked_messages(self, limit: int) -> None:
        """A new maxUnackedMessagesPerSubscription; a raised or removed limit may unblock."""
        self.max_unacked_messages = limit
        self.dispatcher.unacked_limit.max_unacked_messages = limit
        self.dispatcher.wake()

    def remove_consumer(self, consumer: Consumer) -> None:
        held = list(consumer.pending_acks)
        self.dispatcher.remove_consumer(consumer)
        self._count_redeliveries(held)

    def _announce_active(self, active: Consumer | None) -> None:
        if self.sub_type is not SubType.FAILOVER:
            return
        for consumer in self.consumers:
            consumer.cnx.send_active_consumer_change(consumer.consumer_id, consumer is active)

    def _count_redeliveries(self, positions: Iterable[ml.Position]) -> None:
        if not self.track_redeliveries:
            return
        for position in positions:
            self.redelivery_counts[position] = self.redelivery_counts.get(position, 0) + 1
        while len(self.redelivery_counts) > REDELIVERY_TRACKER_MAX:
            self.redelivery_counts.pop(next(iter(self.redelivery_counts)))

    async def acknowledge(
        self, consumer: Consumer, positions: list[ml.Position], cumulative: bool
    ) -> None:
        if cumulative:
            if self.sub_type in (SubType.SHARED, SubType.KEY_SHARED):
                raise errors.InvalidRequestError("Cumulative ack is not allowed on Shared subscriptions")
            position = max(positions)
            consumer.acknowledged_up_to(position)
            if position > self.cursor.mark_delete_position:
                await self.cursor.mark_delete(position)
        else:
            for position in positions:
                self._forget_acknowledged(consumer, position)
            await self.cursor.delete(positions)
        self.msg_acked += len(positions)
        # Acks can unblock consumers held back by maxUnackedMessagesPerConsumer, and the
        # subscription held back by maxUnackedMessagesPerSubscription.
        self.dispatcher.wake()

    async def acknowledge_batch_indexes(
        self, consumer: Consumer, position: ml.Position, ack_set: Sequence[int],
        cumulative: bool,
    ) -> None:
        """Some messages of the batch at position were acknowledged (CommandAck with an
        ack_set: its set bits are the messages still unacknowledged). Cumulatively, every
        entry before the batch is acknowledged too."""
        if cumulative:
            if self.sub_type in (SubType.SHARED, SubType.KEY_SHARED):
                raise errors.InvalidRequestError("Cumulative ack is not allowed on Shared subscriptions")
            # Just before the batch; for a ledger's first entry, (ledger, -1) stands for the
            # end of every earlier ledger, as a mark-delete position may.
            before = ml.Position(position.ledger_id, position.entry_id - 1)
            consumer.acknowledged_up_to(before)
            if before > self.cursor.mark_delete_position:
                await self.cursor.mark_delete(before)
        await self.cursor.delete_batch_indexes(position, ack_set)
        if self.cursor.is_acknowledged(position):
            self._forget_acknowledged(consumer, position)
        else:
            remaining = self.cursor.batch_ack_set(position)
            if remaining is not None:
                for holder in self.consumers:
                    holder.partly_acknowledged(position, unacknowledged_in(remaining))
        self.dispatcher.wake()

    def _forget_acknowledged(self, consumer: Consumer, position: ml.Position) -> None:
        if not consumer.acknowledged(position):
            for other in self.consumers:
                if other.acknowledged(position):
                    break
        self.redelivery_counts.pop(position, None)
        self.dispatcher.forget(position)

    def redeliver(self, consumer: Consumer, positions: list[ml.Position] | None) -> None:
        held = list(consumer.pending_acks) if positions is None else [
            p for p in positions if p in consumer.pending_acks]
        self._count_redeliveries(held)
        self.dispatcher.redeliver(consumer, positions)

    def new_entries(self) -> None:
        self.dispatcher.wake()

    async def reset_cursor(self, position: ml.Position) -> None:
        """Move the subscription (seek / admin reset) and make consumers reconnect.

        The consumers are closed before the cursor moves, as Pulsar does: persisting the
        moved cursor yields, and an acknowledgement they sent before seeing the seek (the
        client's grouped acks go out on a timer) would otherwise land on the moved cursor
        and hide entries the seek is meant to replay."""
        for consumer in list(self.consumers):
            consumer.cnx.send_close_consumer(consumer.consumer_id)
            self.dispatcher.remove_consumer(consumer)
        self.dispatcher.reset()
        self.redelivery_counts.clear()
        await self.cursor.reset_cursor(position)
        self.dispatcher.wake()

    async def close(self) -> None:
        for consumer in list(self.consumers):
            consumer.cnx.send_close_consumer(consumer.consumer_id)
            self.dispatcher.remove_consumer(consumer)
        await self.dispatcher.close()

    def stats(self) -> subscription_stats.SubscriptionStats:
        return subscription_stats.SubscriptionStats(
            sub_type=self.sub_type,
            durable=self.durable,
            backlog=self.cursor.number_of_entries_in_backlog,
            delayed=self.dispatcher.delayed_count(),
            unacked_messages=sum(c.unacked_messages for c in self.consumers),
            msg_out=sum(c.msg_out for c in self.consumers),
            bytes_out=sum(c.bytes_out for c in self.consumers),
            # Stored before SENDs were checked, no client could read them.
            unreadable_entries_skipped=self.dispatcher.unreadable_entries_skipped,
            consumers=tuple(
                subscription_stats.ConsumerStats(
                    consumer_name=c.consumer_name, available_permits=c.permits,
                    unacked_messages=c.unacked_messages, msg_out=c.msg_out,
                    bytes_out=c.bytes_out, address=c.cnx.remote_address,
                    priority_level=c.priority_level)
                for c in self.consumers),
        )


def new_dispatcher(
    cursor: ml.ManagedCursor,
    sub_type: SubType,
    *,
    partition_index: int,
    max_read_batch: int,
    redelivery_count: dispatch.RedeliveryCount,
    on_active_change: Callable[[Consumer | None], None] | None = None,
    delayed_settings: delayed_delivery.DelayedDeliverySettings | None = None,
    max_read_bytes: int = dispatch.MAX_READ_BYTES,
    key_shared_replica_points: int = 0,
    throttle: dispatch_rate.DispatchThrottle | None = None,
) -> dispatch.Dispatcher:
    """The dispatcher of a subscription type's delivery model, held to throttle's rates."""
    dispatcher = _new_dispatcher(
        cursor, sub_type, partition_index=partition_index, max_read_batch=max_read_batch,
        redelivery_count=redelivery_count, on_active_change=on_active_change,
        delayed_settings=delayed_settings, max_read_bytes=max_read_bytes,
        key_shared_replica_points=key_shared_replica_points)
    dispatcher.throttle = throttle
    return dispatcher


def _new_dispatcher(
    cursor: ml.ManagedCursor,
    sub_type: SubType,
    *,
    partition_index: int,
    max_read_batch: int,
    redelivery_count: dispatch.RedeliveryCount,
    on_active_change: Callable[[Consumer | None], None] | None,
    delayed_settings: delayed_delivery.DelayedDeliverySettings | None,
    max_read_bytes: int,
    key_shared_replica_points: int,
) -> dispatch.Dispatcher:
    if sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
        return single_active.SingleActiveDispatcher(
            cursor, partition_index=partition_index, max_read_batch=max_read_batch,
            redelivery_count=redelivery_count, max_read_bytes=max_read_bytes,
            on_active_change=on_active_change)
    if sub_type is SubType.KEY_SHARED:
        return key_shared.KeySharedDispatcher(
            cursor, partition_index=partition_index, max_read_batch=max_read_batch,
            redelivery_count=redelivery_count, max_read_bytes=max_read_bytes,
            delayed_settings=delayed_settings, replica_points=key_shared_replica_points)
    return shared.SharedDispatcher(
        cursor, partition_index=partition_index, max_read_batch=max_read_batch,
        redelivery_count=redelivery_count, max_read_bytes=max_read_bytes,
        delayed_settings=delayed_settings)
