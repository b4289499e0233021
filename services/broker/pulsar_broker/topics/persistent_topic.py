"""A persistent topic: producers append entries to its managed ledger; subscriptions read.

The entry stored is the producer's `metadataSize | metadata | payload` bytes,
unchanged. After each append the subscriptions' dispatchers are woken.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import itertools
import logging
import time
from collections.abc import Callable

from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.managed_ledger import errors as ml_errors
from pulsar_broker.subscriptions import dispatch_rate
from pulsar_broker.subscriptions import dispatcher as dispatch
from pulsar_broker.subscriptions.consumer import SUBSCRIPTION_TYPE_NAMES, SubType
from pulsar_broker.subscriptions.subscription import ConsumerBusyError, Subscription
from pulsar_broker.subscriptions.subscription import check_name as check_subscription_name
from pulsar_broker.topics import (
    backlog_quota,
    deduplication,
    policies,
    producer_access,
    publish_rate,
    subscribe_rate,
    telemetry,
    topic_stats,
)
from pulsar_broker.topics.compaction import compactor
from pulsar_broker.topics.compaction.compacted_cursor import CompactedCursor
from pulsar_broker.topics.producer_access import AccessMode

log = logging.getLogger(__name__)


#: Namespaces whose topics are the broker's own (Apache's system service namespace; the
#: heartbeat topics live there).
SYSTEM_NAMESPACES = frozenset({naming.SYSTEM_NAMESPACE})
#: Local names of Apache's system topics (topic policies' events, transaction state).
SYSTEM_TOPIC_NAMES = frozenset({"__change_events", "__transaction_buffer_snapshot",
                                "__transaction_buffer_snapshot_segments",
                                "__transaction_buffer_snapshot_indexes"})
SYSTEM_TOPIC_SUFFIXES = ("__transaction_pending_ack",)


def is_system_topic(name: naming.TopicName) -> bool:
    """A topic of the broker's own, as Apache tells them: in a system namespace, or named
    as one of its system topics. Such topics are outside maxTopicsPerNamespace and
    encryptionRequired."""
    if str(name.namespace_name) in SYSTEM_NAMESPACES:
        return True
    local = name.partitioned_topic_name.local_name
    return local in SYSTEM_TOPIC_NAMES or local.endswith(SYSTEM_TOPIC_SUFFIXES)


class Producer:
    def __init__(self, producer_id: int, name: str, remote_address: str,
                 disconnect: Callable[[], None] | None = None,
                 access_mode: AccessMode = AccessMode.SHARED) -> None:
        self.producer_id = producer_id
        #: Tells the client its producer is closed (CLOSE_PRODUCER), so it reconnects.
        self.disconnect = disconnect
        self.name = name
        self.access_mode = access_mode
        self.remote_address = remote_address
        self.msg_in = 0
        self.bytes_in = 0
        self.connected_since = time.time()
        #: Whether the client encrypts what it sends (CommandProducer.encrypted).
        self.encrypted = False


@dataclasses.dataclass(eq=False)
class _Waiter:
    """A WaitForExclusive producer in line; its future gets the epoch to take."""

    name: str
    requested_epoch: int | None
    turn: asyncio.Future[int]


class PersistentTopic:
    def __init__(self, name: naming.TopicName, ledger: ml.ManagedLedger, max_read_batch: int,
                 *, track_redeliveries: bool = True,
                 max_read_bytes: int = dispatch.MAX_READ_BYTES,
                 compaction: compactor.TopicCompaction | None = None,
                 key_shared_replica_points: int = 0,
                 recorder: telemetry.TopicTelemetry = telemetry.NO_TELEMETRY,
                 broker_dispatch: dispatch_rate.RateSlot | None = None) -> None:
        self.name = name
        #: One of the broker's own topics (outside encryptionRequired).
        self.system = is_system_topic(name)
        self.ledger = ledger
        self.max_read_batch = max_read_batch
        self.max_read_bytes = max_read_bytes
        #: subscriptionKeySharedConsistentHashingReplicaPoints, 0 without consistent hashing.
        self.key_shared_replica_points = key_shared_replica_points
        self.track_redeliveries = track_redeliveries
        self.producers: dict[int, Producer] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self._producer_ids = itertools.count()
        self.msg_in = 0
        self.bytes_in = 0
        #: Entries added since the topic was loaded (pulsar_storage_write_rate's counter).
        self.entries_in = 0
        self.closed = False
        self._metric_name = str(name)
        #: Told of every entry added (the add-entry latency and size statistics of /metrics).
        self._recorder = recorder
        self.deduplication: deduplication.MessageDeduplication | None = None
        #: Bumped by every switch of deduplication on or off: the last one wins.
        self._deduplication_switches = 0
        #: The namespace's policies as they apply here (kept current by the PolicyEnforcer).
        self.policies = policies.TopicPolicies()
        self._publish_limiter: publish_rate.PublishRateLimiter | None = None
        #: The topic's dispatch rate, shared by the throttles of all its subscriptions.
        self._publish_meter = publish_rate.PublishMeter()
        self._dispatch_slot = dispatch_rate.RateSlot(
            lambda now_s: self._dispatch_rate_now(self.policies.dispatch_rate, now_s))
        #: The broker's dispatch rate, shared by every topic it serves (None: a topic built
        #: without a broker service, as tests do).
        self._broker_dispatch = broker_dispatch
        self._subscribe_limiter: subscribe_rate.SubscribeRateLimiter | None = None
        stored = ledger.properties.get(producer_access.EPOCH_PROPERTY)
        self.access = producer_access.ProducerAccess(None if stored is None else int(stored))
        #: Producers waiting for exclusive access, oldest first (rare and few: a list, not a
        #: deque, which would cost ~760 bytes on every topic, issue 16).
        self._waiting: list[_Waiter] = []
        #: Compaction and the compacted view (None: this broker has no ledger client for it).
        self.compaction = compaction

    def __str__(self) -> str:
        return str(self.name)

    # Producing

    async def add_producer(
        self, name: str, remote_address: str, disconnect: Callable[[], None] | None = None, *,
        access_mode: AccessMode = AccessMode.SHARED, topic_epoch: int | None = None,
        on_queued: Callable[[], None] | None = None,
    ) -> tuple[Producer, int | None]:
        """Admit a producer under its access mode; returns it with the topic epoch to
        announce. A WaitForExclusive producer calls on_queued when it has to wait, and
        returns once it is its turn. Refusals raise ProducerBusyError/ProducerFencedError."""
        self._check_open()
        limit = self.policies.limits.max_producers
        if limit and len(self.producers) >= limit:
            raise producer_access.ProducerBusyError("Topic reached max producers limit")
        decision = self.access.admit(access_mode, name, topic_epoch, bool(self.producers))
        if isinstance(decision, producer_access.Queue):
            epoch: int | None = await self._persist_epoch(
                await self._wait_for_turn(name, topic_epoch, on_queued))
        elif decision.epoch is None:
            epoch = self.access.epoch
        else:
            if isinstance(decision, producer_access.FenceThenGrant):
                self._fence_producers()
            epoch = await self._persist_epoch(decision.epoch)
        if self.closed:
            self._release_exclusive(access_mode)
            self._check_open()
        producer = Producer(next(self._producer_ids), name, remote_address, disconnect,
                            access_mode)
        self.producers[producer.producer_id] = producer
        return producer, epoch

    def remove_producer(self, producer: Producer) -> None:
        if self.producers.pop(producer.producer_id, None) is not producer:
            return
        self._release_exclusive(producer.access_mode)
        if not self.producers:
            # Apache promotes a waiting producer only when an exclusive one leaves; one
            # that waits behind shared producers gets its turn when the last one leaves.
            self._promote_next()

    def refuses_unencrypted(self) -> bool:
        """encryptionRequired: producers must say they encrypt (system topics excepted)."""
        return self.policies.encryption_required and not self.system

    def disconnect_unencrypted_producers(self) -> None:
        """Encryption just became required: producers that do not encrypt are closed (they
        are refused when they come back), as Apache's broker does."""
        for producer in list(self.producers.values()):
            if not producer.encrypted and producer.disconnect is not None:
                log.info("%s: producer %s does not encrypt, and encryption is now required",
                         self.name, producer.name)
                producer.disconnect()
                self.remove_producer(producer)

    def _check_open(self) -> None:
        if self.closed:
            raise errors.ServiceNotReadyError(f"Topic {self.name} is closing")

    def _release_exclusive(self, access_mode: AccessMode) -> None:
        if access_mode is not AccessMode.SHARED:
            self.access.release()

    async def _persist_epoch(self, epoch: int) -> int:
        """Store an exclusive grant's epoch (a ledger property) before the producer hears
        of it; a failure gives the topic back."""
        try:
            await self.ledger.set_property(producer_access.EPOCH_PROPERTY, str(epoch))
        except BaseException:
            self.access.release()
            self._promote_next()
            raise
        self.access.granted(epoch)
        return epoch

    async def _wait_for_turn(self, name: str, requested_epoch: int | None,
                             on_queued: Callable[[], None] | None) -> int:
        waiter = _Waiter(name, requested_epoch, asyncio.get_running_loop().create_future())
        self._waiting.append(waiter)
        if on_queued is not None:
            on_queued()
        try:
            return await waiter.turn
        except asyncio.CancelledError:
            # The client closed the producer or the connection while it waited.
            if waiter in self._waiting:
                self._waiting.remove(waiter)
                self.access.stop_waiting()
            elif waiter.turn.done() and not waiter.turn.cancelled():
                self.access.release()
                self._promote_next()
            raise

    def _promote_next(self) -> None:
        """Give the topic to the first waiting producer whose epoch is still current."""
        while self._waiting and not self.access.has_exclusive and not self.producers:
            waiter = self._waiting.pop(0)
            try:
                epoch = self.access.promote(waiter.name, waiter.requested_epoch)
            except producer_access.ProducerFencedError as exc:
                waiter.turn.set_exception(exc)
                continue
            waiter.turn.set_result(epoch)

    def _fence_producers(self) -> None:
        """ExclusiveWithFencing: every producer is closed (its client reconnects and is
        refused), every waiting one fails."""
        for waiter in self._waiting:
            self.access.stop_waiting()
            if not waiter.turn.done():
                waiter.turn.set_exception(producer_access.ProducerFencedError("Fenced out"))
        self._waiting.clear()
        fenced = list(self.producers.values())
        self.producers.clear()
        for producer in fenced:
            log.info("%s: fencing out producer %s", self.name, producer.name)
            if producer.disconnect is not None:
                producer.disconnect()

    def publish_future(
        self, producer: Producer, data: bytes, num_messages: int
    ) -> asyncio.Future[ml.Position]:
        """Publish without a task per entry: the ledger's add future, whose first callback
        counts the entry and wakes the subscriptions. Refusals raise at once."""
        started = time.perf_counter()
        added = self.ledger.add_entry_future(data)
        added.add_done_callback(
            functools.partial(self._published, producer, len(data), num_messages, started)
        )
        return added

    def _published(
        self,
        producer: Producer,
        size: int,
        num_messages: int,
        started: float,
        added: asyncio.Future[ml.Position],
    ) -> None:
        if added.cancelled() or added.exception() is not None:
            return
        self._recorder.record_add_entry(self._metric_name, time.perf_counter() - started, size)
        producer.msg_in += num_messages
        producer.bytes_in += size
        self.msg_in += num_messages
        self.bytes_in += size
        self.entries_in += 1
        for subscription in self.subscriptions.values():
            subscription.new_entries()

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
    ) -> Subscription:
        """The subscription, created when new. With read_compacted, it reads the compacted
        view up to the compaction horizon (Exclusive and Failover only, as Apache)."""
        check_subscription_name(name)
        type_name = SUBSCRIPTION_TYPE_NAMES[sub_type]
        if type_name not in self.policies.subscription_types_enabled:
            # Apache's message, braces included.
            raise errors.NotAllowedError(
                f"Topic[{{{self.name}}}] doesn't support {type_name} sub type!")
        if read_compacted and sub_type in (SubType.SHARED, SubType.KEY_SHARED):
            raise errors.NotAllowedError(
                "readCompacted only allowed on failover or exclusive subscriptions")
        existing = self.subscriptions.get(name)
        if existing is None:
            self._check_subscriptions_limit()
        if existing is not None:
            if read_compacted and not existing.consumers and not isinstance(
                    existing.cursor, CompactedCursor):
                return await self._read_compacted(existing)
            return existing
        if durable:
            from_earliest = (initial_position is ml.InitialPosition.EARLIEST
                             and name not in {c.name for c in self.ledger.cursors})
            cursor = await self.ledger.open_cursor(name, initial_position)
            # Another SUBSCRIBE to the same subscription may have completed meanwhile: both
            # share its cursor, so both must share its subscription (one dispatcher).
            existing = self.subscriptions.get(name)
            if existing is not None:
                return existing
        else:
            if start_message_id is None:
                start_message_id = (ml.EARLIEST if initial_position is ml.InitialPosition.EARLIEST
                                    else ml.LATEST)
            from_earliest = start_message_id == ml.EARLIEST
            cursor = self.ledger.new_non_durable_cursor(start_message_id, name,
                                                        inclusive=start_inclusive)
        if read_compacted:
            cursor = await self._compacted_cursor(cursor, from_earliest)
        subscription = Subscription(
            str(self.name), name, cursor, sub_type, self.name.partition_index,
            self.max_read_batch, self.track_redeliveries, delayed_settings=self.policies.delayed,
            max_read_bytes=self.max_read_bytes,
            key_shared_replica_points=self.key_shared_replica_points,
            throttle=self._dispatch_throttle(),
            max_unacked_messages=self.policies.limits.max_unacked_per_subscription,
        )
        self.subscriptions[name] = subscription
        return subscription

    async def _compacted_cursor(self, cursor: ml.ManagedCursor,
                                from_earliest: bool) -> ml.ManagedCursor:
        if self.compaction is None:
            return cursor
        ledger = self.ledger
        return CompactedCursor(cursor, self.compaction.view, lambda: ledger.first_position,
                               await self.compaction.view(), from_earliest=from_earliest)

    async def _read_compacted(self, existing: Subscription) -> Subscription:
        """An idle subscription (loaded after a restart) gets a consumer that reads compacted:
        it is rebuilt over the same cursor, reading through the compacted view."""
        await existing.close()
        subscription = Subscription(
            str(self.name), existing.name, await self._compacted_cursor(existing.cursor, False),
            existing.sub_type, self.name.partition_index, self.max_read_batch,
            self.track_redeliveries, delayed_settings=self.policies.delayed,
            max_read_bytes=self.max_read_bytes,
            key_shared_replica_points=self.key_shared_replica_points,
            throttle=self._dispatch_throttle(),
            max_unacked_messages=self.policies.limits.max_unacked_per_subscription)
        self.subscriptions[existing.name] = subscription
        return subscription

    def _check_subscriptions_limit(self) -> None:
        limit = self.policies.limits.max_subscriptions
        users = [name for name in self.subscriptions if name != compactor.COMPACTION_SUBSCRIPTION]
        if limit and len(users) >= limit:
            raise errors.NotAllowedError("Topic reached max subscriptions limit")

    def check_consumer_admission(self, subscription_consumers: int) -> None:
        """Refuse a consumer past maxConsumersPerTopic / maxConsumersPerSubscription, given
        how many consumers its subscription has."""
        limits = self.policies.limits
        if limits.max_consumers and sum(
                len(s.consumers) for s in self.subscriptions.values()) >= limits.max_consumers:
            raise ConsumerBusyError("Topic reached max consumers limit")
        if (limits.max_consumers_per_subscription
                and subscription_consumers >= limits.max_consumers_per_subscription):
            raise ConsumerBusyError("Subscription reached max consumers limit")

    def _dispatch_throttle(self) -> dispatch_rate.DispatchThrottle:
        """A new subscription's throttle: the broker's dispatch rate, the topic's and one of
        its own."""
        broker = [] if self._broker_dispatch is None else [self._broker_dispatch]
        return dispatch_rate.DispatchThrottle([
            *broker, self._dispatch_slot,
            dispatch_rate.RateSlot(lambda now_s: self._dispatch_rate_now(
                self.policies.subscription_dispatch_rate, now_s))])

    def _dispatch_rate_now(self, rate: dispatch_rate.DispatchRate,
                           now_s: float) -> dispatch_rate.DispatchRate:
        """The rate in force: a relativeToPublishRate one adds the topic's publish rate."""
        if not rate.relative_to_publish_rate:
            return rate
        return rate.plus_publish_rate(*self._publish_meter.update(self.msg_in, self.bytes_in,
                                                                  now_s))

    def check_subscribe_rate(self, consumer: subscribe_rate.ConsumerIdentity,
                             now_s: float) -> None:
        """Refuse a subscribe past the topic's subscribeRate for that consumer (host, name,
        id), with Apache's NotAllowed."""
        rate = self.policies.subscribe_rate
        if not rate.limited:
            self._subscribe_limiter = None
            return
        limiter = self._subscribe_limiter
        if limiter is None or limiter.rate != rate:
            limiter = self._subscribe_limiter = subscribe_rate.SubscribeRateLimiter(rate, now_s)
        if not limiter.try_acquire(consumer, now_s):
            raise errors.NotAllowedError("Subscribe limited by subscribe rate limit per consumer.")

    def publish_pause_s(self, messages: int, size: int, now_s: float) -> float:
        """Seconds the sender must stop sending to keep the topic within its publish rate."""
        rate = self.policies.publish_rate
        if not rate.limited:
            self._publish_limiter = None
            return 0.0
        limiter = self._publish_limiter
        if limiter is None or limiter.rate != rate:
            limiter = self._publish_limiter = publish_rate.PublishRateLimiter(rate, now_s)
        return limiter.record(messages, size, now_s)

    async def last_entry(self, cursor: ml.ManagedCursor) -> tuple[ml.Position, bytes | None]:
        """The last message a consumer on this cursor can get (GET_LAST_MESSAGE_ID) and its
        bytes (None when there is none). A compacted reader whose topic has nothing after
        the compaction horizon gets the compacted ledger's last entry, as Apache answers:
        otherwise a key deleted at the end would make it wait for a message never sent."""
        last = self.ledger.last_confirmed_entry
        if isinstance(cursor, CompactedCursor) and self.compaction is not None:
            view = await self.compaction.view()
            # (ledger, -1): nothing stored after the horizon (its ledgers may be trimmed).
            if view is not None and (last <= view.horizon or last.entry_id < 0):
                if not view.positions:
                    return ml.EARLIEST, None
                entry = (await view.read_from(view.positions[-1], 1))[0]
                return entry.position, entry.data
        if last.entry_id < 0:
            return last, None
        return last, (await self.ledger.read_entry(last)).data

    # Compaction

    def compact(self) -> None:
        """Start compacting in the background (pulsar-admin topics compact)."""
        if self.compaction is None:
            raise errors.NotAllowedError("Topic compaction needs a ledger client on this broker")
        task = self.compaction.trigger()
        # The `__compaction` cursor is a subscription, listed as Apache lists it.
        task.add_done_callback(lambda _t: None if self.closed else asyncio.ensure_future(
            self.load_durable_subscriptions()))

    async def create_subscription(self, name: str, position: ml.Position | None) -> None:
        """Admin: create a durable subscription at a position (latest by default)."""
        if name in self.subscriptions or name in {c.name for c in self.ledger.cursors}:
            raise errors.ConflictError("Subscription already exists for topic")
        cursor = await self.ledger.open_cursor(
            name, ml.InitialPosition.EARLIEST if position == ml.EARLIEST else ml.InitialPosition.LATEST)
        if name in self.subscriptions:
            raise errors.ConflictError("Subscription already exists for topic")
        if position not in (None, ml.EARLIEST, ml.LATEST):
            await cursor.reset_cursor(position)
        self.subscriptions[name] = Subscription(
            str(self.name), name, cursor, SubType.EXCLUSIVE, self.name.partition_index,
            self.max_read_batch, self.track_redeliveries, delayed_settings=self.policies.delayed,
            max_read_bytes=self.max_read_bytes,
            key_shared_replica_points=self.key_shared_replica_points,
            throttle=self._dispatch_throttle(),
            max_unacked_messages=self.policies.limits.max_unacked_per_subscription)

    async def enable_deduplication(self) -> None:
        """Deduplication on: its ids are loaded (snapshot, then replay) before SENDs are
        checked against them."""
        if self.deduplication is not None:
            return
        self._deduplication_switches += 1
        switch = self._deduplication_switches
        loaded = deduplication.MessageDeduplication(self.ledger)
        await loaded.load()
        if switch == self._deduplication_switches:  # not switched off (or on again) meanwhile
            self.deduplication = loaded

    async def disable_deduplication(self) -> None:
        """Deduplication off: its ids are forgotten and its cursor deleted, as Apache's
        broker does, so the cursor no longer holds ledgers back from trimming."""
        self._deduplication_switches += 1
        self.deduplication = None
        if any(cursor.name == deduplication.CURSOR_NAME for cursor in self.ledger.cursors):
            try:
                await self.ledger.delete_cursor(deduplication.CURSOR_NAME)
            except ml_errors.ManagedLedgerError as exc:  # the next load or switch tries again
                log.warning("%s: deleting the deduplication cursor failed: %s", self.name, exc)

    async def load_durable_subscriptions(self) -> None:
        """Subscriptions live on as cursors: make them visible after a restart."""
        for cursor in self.ledger.cursors:
            if cursor.name == deduplication.CURSOR_NAME:
                continue
            if cursor.durable and cursor.name not in self.subscriptions:
                self.subscriptions[cursor.name] = Subscription(
                    str(self.name), cursor.name, cursor, SubType.EXCLUSIVE,
                    self.name.partition_index, self.max_read_batch, self.track_redeliveries,
                    delayed_settings=self.policies.delayed, max_read_bytes=self.max_read_bytes,
                    key_shared_replica_points=self.key_shared_replica_points,
                    throttle=self._dispatch_throttle(),
                    max_unacked_messages=self.policies.limits.max_unacked_per_subscription)

    async def remove_subscription_if_idle(self, subscription: Subscription) -> None:
        """A reader's subscription ends with its last consumer."""
        if not subscription.durable and not subscription.consumers:
            self.subscriptions.pop(subscription.name, None)
            await subscription.close()
            await subscription.cursor.close()

    async def unsubscribe(self, name: str, force: bool = False) -> None:
        subscription = self.subscriptions.get(name)
        if subscription is None:
            if name in {c.name for c in self.ledger.cursors}:
                await self.ledger.delete_cursor(name)
                return
            raise errors.NotFoundError("Subscription not found")
        if subscription.consumers and not force:
            raise errors.PreconditionFailedError("Subscription has active connected consumers")
        del self.subscriptions[name]
        await subscription.close()
        if subscription.durable:
            await self.ledger.delete_cursor(name)
        else:
            await subscription.cursor.close()

    # Lifecycle

    async def close(self) -> None:
        """Unload: producers and consumers are told to reconnect (they look the topic up
        again), then the subscriptions and the managed ledger close."""
        self.closed = True
        for producer in list(self.producers.values()):
            if producer.disconnect is not None:
                producer.disconnect()
        self.producers.clear()
        for waiter in self._waiting:
            if not waiter.turn.done():
                waiter.turn.set_exception(errors.ServiceNotReadyError(f"Topic {self.name} closed"))
        self._waiting.clear()
        for subscription in list(self.subscriptions.values()):
            await subscription.close()
        self.subscriptions.clear()
        if self.compaction is not None:
            await self.compaction.close()
        await self.ledger.close()

    async def delete(self, force: bool = False) -> None:
        if not force:
            if self.producers:
                raise errors.PreconditionFailedError("Topic has active producers")
            if any(s.consumers for s in self.subscriptions.values()):
                raise errors.PreconditionFailedError("Topic has active subscriptions")
        self.closed = True
        for subscription in list(self.subscriptions.values()):
            await subscription.close()
        self.subscriptions.clear()
        if self.compaction is not None:
            await self.compaction.delete()
        await self.ledger.delete()

    # Stats

    def stats(self) -> topic_stats.TopicStats:
        compaction = self.compaction
        return topic_stats.TopicStats(
            msg_in=self.msg_in,
            bytes_in=self.bytes_in,
            storage_size=self.ledger.total_size,
            backlog_size=self.backlog_size(),
            publishers=tuple(
                topic_stats.PublisherStats(
                    producer_id=p.producer_id, producer_name=p.name, msg_in=p.msg_in,
                    bytes_in=p.bytes_in, address=p.remote_address)
                for p in self.producers.values()),
            subscriptions={name: s.stats() for name, s in self.subscriptions.items()},
            deduplication=bool(self.deduplication),
            compaction=None if compaction is None else topic_stats.CompactionStats(
                removed_event_count=compaction.removed_event_count,
                succeed_timestamp_ms=compaction.succeed_timestamp_ms,
                failed_timestamp_ms=compaction.failed_timestamp_ms,
                duration_ms=compaction.duration_ms),
        )

    def backlog_size(self) -> int:
        """Estimated bytes the slowest subscription has not acknowledged."""
        return backlog_quota.backlog_size(self)

    def internal_stats(self) -> topic_stats.InternalStats:
        ledger = self.ledger
        ledgers = tuple(ledger.ledgers)
        return topic_stats.InternalStats(
            number_of_entries=ledger.number_of_entries,
            total_size=ledger.total_size,
            current_ledger_entries=ledgers[-1].entries if ledgers else 0,
            current_ledger_size=ledgers[-1].size if ledgers else 0,
            last_confirmed_entry=ledger.last_confirmed_entry,
            terminated=ledger.is_terminated,
            ledgers=ledgers,
            cursors={
                c.name: topic_stats.CursorStats(
                    mark_delete_position=c.mark_delete_position,
                    read_position=c.read_position,
                    individually_deleted_ranges=tuple(c.individually_deleted_ranges),
                    entries_since_first_not_acked=c.number_of_entries_in_backlog,
                    properties=dict(c.properties))
                for c in ledger.cursors
            },
            compacted_ledger=self._compacted_ledger_stats(),
        )

    def _compacted_ledger_stats(self) -> topic_stats.CompactedLedgerStats | None:
        view = None if self.compaction is None else self.compaction.loaded_view
        if view is None:
            return None
        return topic_stats.CompactedLedgerStats(
            ledger_id=view.ledger_id, entries=len(view.positions), size=view.handle.length)
