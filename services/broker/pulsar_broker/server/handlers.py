"""Handlers of the commands a client sends, one method per command type.

Each handler validates its request, calls the broker service, topics and
subscriptions, and answers with the reply the official clients expect.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from typing import TYPE_CHECKING, Any

from pulsar_common import naming
from pulsar_common.wire import commands as replies
from pulsar_common.wire import entry as wire_entry
from pulsar_common.wire import entry_info, frame, validation
from pulsar_common.wire import errors as wire_errors
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.managed_ledger import errors as ml_errors
from pulsar_broker.schema import errors as schema_errors
from pulsar_broker.schema import records as schema_records
from pulsar_broker.schema import topic_schemas
from pulsar_broker.security import authorization as authz
from pulsar_broker.server import commands, schema_commands
from pulsar_broker.server.handles import ConsumerHandle, ProducerHandle
from pulsar_broker.subscriptions.consumer import Consumer, SubType
from pulsar_broker.topics import (
    backlog_quota,
    deduplication,
    policies,
    producer_access,
)
from pulsar_broker.topics.non_persistent.subscription import (
    NonPersistentSubscription,
    not_supported,
)
from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic
from pulsar_broker.topics.persistent_topic import PersistentTopic

if TYPE_CHECKING:
    from pulsar_broker.server.connection import ServerConnection
    from pulsar_broker.topics.persistent_topic import Producer

log = logging.getLogger(__name__)
T = pb.BaseCommand


class Handlers:
    def __init__(self, cnx: ServerConnection) -> None:
        self.cnx = cnx
        self.service = cnx.service
        self.table: dict[int, Any] = {
            T.PING: self.ping,
            T.PONG: lambda f: None,
            T.PARTITIONED_METADATA: self.partitioned_metadata,
            T.LOOKUP: self.lookup,
            T.PRODUCER: self.producer,
            T.SEND: self.send,
            T.CLOSE_PRODUCER: self.close_producer,
            T.SUBSCRIBE: self.subscribe,
            T.FLOW: self.flow,
            T.ACK: self.ack,
            T.REDELIVER_UNACKNOWLEDGED_MESSAGES: self.redeliver,
            T.UNSUBSCRIBE: self.unsubscribe,
            T.CLOSE_CONSUMER: self.close_consumer,
            T.SEEK: self.seek,
            T.GET_LAST_MESSAGE_ID: self.get_last_message_id,
            T.GET_TOPICS_OF_NAMESPACE: self.get_topics_of_namespace,
            T.GET_SCHEMA: self.get_schema,
            T.GET_OR_CREATE_SCHEMA: self.get_or_create_schema,
            T.CONSUMER_STATS: self.consumer_stats,
            T.AUTH_RESPONSE: self.auth_response,
        }

    # Connection

    def connect(self, connect: pb.CommandConnect) -> None:
        self.cnx.protocol_version = connect.protocol_version
        if not self.cnx.security.connect(connect):
            self.service.connections.connect_refused()
            return
        self.service.connections.connected()
        self.cnx.connected = True
        self.cnx.write(replies.connected(
            commands.SERVER_VERSION, min(connect.protocol_version, commands.PROTOCOL_VERSION),
            max_message_size=self.cnx.config.max_message_size))

    def auth_response(self, received: frame.Frame) -> None:
        self.cnx.security.auth_response(received.command.authResponse)

    def ping(self, received: frame.Frame) -> None:
        self.cnx.write(replies.pong())

    # Lookups

    def partitioned_metadata(self, received: frame.Frame) -> None:
        request = received.command.partitionMetadata
        self.cnx.spawn(self._partitioned_metadata(request), None)

    async def _partitioned_metadata(self, request: pb.CommandPartitionedTopicMetadata) -> None:
        try:
            topic = naming.TopicName.parse(request.topic)
            await self.cnx.security.check_topic(topic, authz.TopicOperation.LOOKUP)
            partitions = await self.service.partitioned_metadata(topic, auto_create=True)
            reply = replies.partitioned_metadata_response(request.request_id, partitions)
        except Exception as exc:  # noqa: BLE001 - every failure is answered, never dropped
            reply = replies.partitioned_metadata_failed(
                request.request_id, commands.server_error_of(exc), str(exc))
        self.cnx.write(reply)

    def lookup(self, received: frame.Frame) -> None:
        self.cnx.spawn(self._lookup(received.command.lookupTopic), None)

    async def _lookup(self, request: pb.CommandLookupTopic) -> None:
        try:
            topic = naming.TopicName.parse(request.topic)
            await self.cnx.security.check_topic(topic, authz.TopicOperation.LOOKUP)
            # Reading the namespace's policies (for its bundles) fails when it does not exist.
            owner = await self.service.namespaces.lookup(topic, request.authoritative)
            listener = request.advertised_listener_name
            reply = replies.lookup_response(
                request.request_id, owner.native_url_for(listener),
                broker_service_url_tls=owner.native_url_tls_for(listener), authoritative=True)
        except Exception as exc:  # noqa: BLE001 - every failure is answered, never dropped
            reply = replies.lookup_failed(request.request_id, commands.server_error_of(exc),
                                          str(exc))
        self.cnx.write(reply)

    # Producers

    def producer(self, received: frame.Frame) -> None:
        request = received.command.producer
        self.cnx.spawn(self._producer(request), request.request_id)

    async def _producer(self, request: pb.CommandProducer) -> None:
        existing = self.cnx.producers.get(request.producer_id)
        if existing is not None:
            self._producer_success(request.request_id, existing.producer.name,
                                   existing.topic, existing.schema_version)
            return
        if request.producer_id in self.cnx.waiting_producers:
            self.cnx.write(replies.error(request.request_id, pb.ServiceNotReady,
                                          "Producer is already present on the connection"))
            return
        topic_name = naming.TopicName.parse(request.topic)
        await self.cnx.security.check_topic(topic_name, authz.TopicOperation.PRODUCE)
        topic = await self._topic(topic_name, create=True)
        if topic is None:
            raise errors.TopicNotFoundError(f"Topic {topic_name} does not exist")
        if isinstance(topic, PersistentTopic) and topic.ledger.is_terminated:
            self.cnx.write(replies.error(request.request_id, pb.TopicTerminatedError,
                                          "Topic was terminated"))
            return
        quota = None if isinstance(topic, NonPersistentTopic) else (
            await backlog_quota.producer_refusal(topic, int(time.time() * 1000)))
        if quota is not None:
            # As Apache: hold is a ProducerBlockedQuotaExceededError, exception the
            # ...Exception, which also fails the client's pending sends.
            code = (pb.ProducerBlockedQuotaExceededError if quota.policy == policies.HOLD
                    else pb.ProducerBlockedQuotaExceededException)
            self.cnx.write(replies.error(
                request.request_id, code,
                "Cannot create producer on topic with backlog quota exceeded"))
            return
        if (isinstance(topic, PersistentTopic) and topic.refuses_unencrypted()
                and not request.encrypted):
            # As Apache: encryptionRequired refuses a producer that will not encrypt.
            self.cnx.write(replies.error(request.request_id, pb.MetadataError,
                                          f"Encryption is required in {topic_name}"))
            return
        try:
            schema_version = await topic_schemas.for_producer(
                self.service, topic_name, schema_commands.announced_schema(request))
        except schema_errors.IncompatibleSchemaError as exc:
            self.cnx.write(replies.error(request.request_id, pb.IncompatibleSchema, str(exc)))
            return
        name = request.producer_name or self.service.generate_producer_name()
        version = None if schema_version is None else schema_records.encode_version(schema_version)
        producer, epoch = await self._admit_producer(request, topic, name, version)
        producer.encrypted = request.encrypted
        if self.cnx.transport is None:
            # The connection went away while the producer waited for its turn.
            topic.remove_producer(producer)
            return
        self.cnx.producers[request.producer_id] = ProducerHandle(request.producer_id, topic,
                                                                 producer, version)
        self._producer_success(request.request_id, name, topic, version, topic_epoch=epoch)

    async def _topic(self, name: naming.TopicName,
                     create: bool) -> PersistentTopic | NonPersistentTopic | None:
        if name.persistent:
            return await self.service.get_topic(name, create=create)
        return await self.service.get_non_persistent_topic(name, create=create)

    async def _admit_producer(self, request: pb.CommandProducer,
                              topic: PersistentTopic | NonPersistentTopic,
                              name: str, version: bytes | None) -> tuple[Producer, int | None]:
        """Add the producer to the topic under its access mode. A WaitForExclusive one that
        has to wait is told so (PRODUCER_SUCCESS with producer_ready=false) and waits here;
        CLOSE_PRODUCER or the connection's end cancel the wait."""
        task = asyncio.current_task()
        assert task is not None
        self.cnx.waiting_producers[request.producer_id] = task
        try:
            return await topic.add_producer(
                name, self.cnx.remote_address,
                functools.partial(self.cnx.send_close_producer, request.producer_id),
                access_mode=producer_access.AccessMode(request.producer_access_mode),
                topic_epoch=request.topic_epoch if request.HasField("topic_epoch") else None,
                on_queued=lambda: self._producer_success(request.request_id, name, topic, version,
                                                         producer_ready=False))
        finally:
            self.cnx.waiting_producers.pop(request.producer_id, None)

    def _producer_success(self, request_id: int, name: str,
                          topic: PersistentTopic | NonPersistentTopic,
                          schema_version: bytes | None, *, topic_epoch: int | None = None,
                          producer_ready: bool = True) -> None:
        dedup = topic.deduplication
        last = -1 if dedup is None else dedup.last_sequence_id(name)
        self.cnx.write(replies.producer_success(request_id, name, last_sequence_id=last,
                                                schema_version=schema_version,
                                                topic_epoch=topic_epoch,
                                                producer_ready=producer_ready))

    def send(self, received: frame.Frame) -> None:
        request = received.command.send
        handle = self.cnx.producers.get(request.producer_id)
        if handle is None or handle.closed:
            log.info("SEND for unknown producer %s on %s", request.producer_id,
                     self.cnx.remote_address)
            self.cnx.close()
            return
        if not received.checksum_valid:
            self.cnx.write(replies.send_error(request.producer_id, request.sequence_id,
                                              pb.ChecksumError, "Checksum failed on the broker"))
            return
        assert received.entry is not None
        try:
            metadata = validation.check_entry(received.entry)
        except wire_errors.WireError as exc:
            # As Apache answers metadata it refuses (MetadataError); nothing is stored. The
            # official clients close the connection on this error, so no later SEND can
            # get ahead of the refused one.
            log.warning("refused a SEND from %s to %s: %s", self.cnx.remote_address,
                        handle.topic, exc)
            self.cnx.write(replies.send_error(request.producer_id, request.sequence_id,
                                              pb.MetadataError, f"Invalid message: {exc}"))
            return
        if (isinstance(handle.topic, PersistentTopic) and handle.topic.refuses_unencrypted()
                and not metadata.encryption_keys):
            # As Apache: refused with MetadataError; the broker never reads the payload.
            log.warning("refused an unencrypted SEND from %s to %s: encryption is required",
                        self.cnx.remote_address, handle.topic)
            self.cnx.write(replies.send_error(request.producer_id, request.sequence_id,
                                              pb.MetadataError, "Messages must be encrypted"))
            return
        data = frame.entry_bytes(received.entry)
        num_messages = request.num_messages if request.HasField("num_messages") else 1
        highest = request.highest_sequence_id if request.HasField("highest_sequence_id") else -1
        dedup = handle.topic.deduplication
        if dedup is not None and deduplication.is_partial_chunk(metadata):
            dedup = None  # the message's last chunk is the one deduplicated
        status = (deduplication.Status.NOT_DUPLICATE if dedup is None
                  else dedup.check(handle.producer.name, request.sequence_id, highest))
        if status is deduplication.Status.DUPLICATE:
            # Acknowledged as Apache does, with id (-1, -1), in order with the others.
            added = asyncio.get_running_loop().create_future()
            added.set_result(deduplication.DUPLICATE)
        elif status is deduplication.Status.UNKNOWN:
            # Its first add is still in flight and may fail: acknowledging it now could
            # lose it. Failed like an add, so the client resends it once that add ended.
            added = asyncio.get_running_loop().create_future()
            added.set_exception(deduplication.DuplicateUnknownError(
                f"sequence id {request.sequence_id} of {handle.producer.name} is still being "
                "persisted; cannot tell yet whether it is a duplicate"))
        else:
            try:
                added = handle.topic.publish_future(handle.producer, data, num_messages)
            except Exception as exc:  # noqa: BLE001 - refused at once: answered like a failed add
                added = asyncio.get_running_loop().create_future()
                added.set_exception(exc)
            if dedup is not None:
                added.add_done_callback(functools.partial(
                    self._deduplication_outcome, dedup, handle.producer.name,
                    request.sequence_id, highest))
        handle.in_flight.append((added, request.sequence_id, highest, num_messages))
        self.cnx.send_started()
        if isinstance(handle.topic, PersistentTopic):
            pause_s = handle.topic.publish_pause_s(num_messages, len(data), time.monotonic())
            if pause_s > 0:
                self.cnx.throttle_publishing(pause_s)
        added.add_done_callback(lambda _f: self._send_receipts(handle))

    @staticmethod
    def _deduplication_outcome(dedup: deduplication.MessageDeduplication, name: str,
                               sequence_id: int, highest: int,
                               added: asyncio.Future[ml.Position]) -> None:
        if added.cancelled() or added.exception() is not None:
            dedup.publish_failed()
        else:
            dedup.persisted(name, sequence_id, highest, added.result())

    def _send_receipts(self, handle: ProducerHandle) -> None:
        """Answer completed SENDs in their order; a failed one closes the connection so
        the client resends what is pending."""
        while handle.in_flight and handle.in_flight[0][0].done():
            added, sequence_id, highest, _ = handle.in_flight.popleft()
            self.cnx.send_finished()
            if added.cancelled() or added.exception() is not None:
                if not handle.failed:
                    # Once per producer and connection, not once per pending message: the
                    # connection closes and the client resends everything still pending.
                    handle.failed = True
                    self._publish_failed(handle, None if added.cancelled() else added.exception())
                continue
            position = added.result()
            self.cnx.write(replies.send_receipt(
                handle.producer_id, sequence_id, position.ledger_id, position.entry_id,
                highest_sequence_id=highest if highest >= 0 else None))

    def _publish_failed(self, handle: ProducerHandle, failure: BaseException | None) -> None:
        log.warning("publish on %s failed: %s; closing connection from %s (%d sends pending)",
                    handle.topic, failure, self.cnx.remote_address, len(handle.in_flight) + 1)
        if isinstance(failure, ml_errors.ManagedLedgerFencedError
                      | ml_errors.ManagedLedgerClosedError):
            # The ledger can take no more writes here: reload the topic (which
            # recovers its ledger) when the client reconnects.
            self.cnx.spawn(self.service.unload_topic(handle.topic.name))
        self.cnx.close()

    def close_producer(self, received: frame.Frame) -> None:
        request = received.command.close_producer
        self.cnx.spawn(self._close_producer(request), request.request_id)

    async def _close_producer(self, request: pb.CommandCloseProducer) -> None:
        waiting = self.cnx.waiting_producers.pop(request.producer_id, None)
        if waiting is not None:
            waiting.cancel()
        handle = self.cnx.producers.pop(request.producer_id, None)
        if handle is not None:
            handle.closed = True
            pending = [task for task, *_ in handle.in_flight]
            if pending:
                await asyncio.wait(pending)
            handle.topic.remove_producer(handle.producer)
        self.cnx.write(replies.success(request.request_id))

    # Consumers

    def subscribe(self, received: frame.Frame) -> None:
        request = received.command.subscribe
        self.cnx.spawn(self._subscribe(request), request.request_id)

    async def _subscribe(self, request: pb.CommandSubscribe) -> None:
        if request.consumer_id in self.cnx.consumers:
            self.cnx.write(replies.success(request.request_id))
            return
        topic_name = naming.TopicName.parse(request.topic)
        await self.cnx.security.check_topic(topic_name, authz.TopicOperation.CONSUME,
                                            request.subscription)
        create = request.force_topic_creation if request.HasField("force_topic_creation") else True
        topic = await self._topic(topic_name, create=create)
        if topic is None:
            raise errors.TopicNotFoundError(f"Topic {topic_name} does not exist")
        if isinstance(topic, PersistentTopic):
            # Apache knows a consumer by its client's host (no port), name and id.
            host = self.cnx.remote_address.rsplit(":", 1)[0]
            topic.check_subscribe_rate((host, request.consumer_name, request.consumer_id),
                                       time.monotonic())
        schema = schema_commands.announced_schema(request)
        if schema is not None:
            try:
                if isinstance(topic, PersistentTopic):
                    await topic_schemas.for_consumer(self.service, topic, schema)
                else:
                    # Nothing stored to read: the schema is registered or checked as a
                    # producer's would be.
                    await topic_schemas.for_producer(self.service, topic_name, schema)
            except schema_errors.IncompatibleSchemaError as exc:
                self.cnx.write(replies.error(request.request_id, pb.IncompatibleSchema, str(exc)))
                return
        sub_type = SubType(request.subType)
        durable = request.durable if request.HasField("durable") else True
        if (durable and isinstance(topic, PersistentTopic)
                and request.subscription not in topic.subscriptions
                and not topic.policies.auto_subscription_creation):
            # As Apache: with auto subscription creation off only an admin creates a durable
            # subscription; readers (non-durable) are not affected.
            self.cnx.write(replies.error(request.request_id, pb.SubscriptionNotFound,
                                         "Subscription does not exist"))
            return
        initial = (ml.InitialPosition.EARLIEST if request.initialPosition == pb.CommandSubscribe.Earliest
                   else ml.InitialPosition.LATEST)
        start, inclusive = None, False
        if not durable and request.HasField("start_message_id"):
            start, inclusive = self._start_position(request.start_message_id)
        subscription = await topic.subscribe(
            request.subscription, sub_type, durable, initial, start, inclusive,
            read_compacted=request.read_compacted)
        max_unacked = self.service.config.max_unacked_messages_per_consumer
        if isinstance(topic, PersistentTopic):
            topic.check_consumer_admission(len(subscription.consumers))
            if topic.policies.limits.max_unacked_per_consumer is not None:
                max_unacked = topic.policies.limits.max_unacked_per_consumer
        consumer = Consumer(
            self.cnx, request.consumer_id, request.consumer_name or f"consumer-{request.consumer_id}",
            sub_type, request.priority_level, topic_name.partition_index, max_unacked,
        )
        subscription.add_consumer(consumer)
        self.cnx.consumers[request.consumer_id] = ConsumerHandle(topic, subscription, consumer)
        self.cnx.write(replies.success(request.request_id))

    @staticmethod
    def _start_position(data: pb.MessageIdData) -> tuple[ml.Position, bool]:
        """Where a reader starts. Earliest/latest sentinels map to EARLIEST/LATEST. Any
        other id is delivered again itself: the client drops what precedes its start (and
        the start too unless it asked for an inclusive start), batch index included."""
        position = commands.position_of(data)
        if position.ledger_id < 0:
            return ml.EARLIEST, False
        if position.ledger_id >= 2**63 - 1:
            return ml.LATEST, False
        return position, True

    def flow(self, received: frame.Frame) -> None:
        request = received.command.flow
        handle = self.cnx.consumers.get(request.consumer_id)
        if handle is None:
            return
        handle.consumer.flow(request.messagePermits)
        handle.subscription.dispatcher.wake()

    def ack(self, received: frame.Frame) -> None:
        request = received.command.ack
        self.cnx.spawn(self._ack(request), None)

    async def _ack(self, request: pb.CommandAck) -> None:
        handle = self.cnx.consumers.get(request.consumer_id)
        error: Exception | None = None
        if handle is not None:
            cumulative = request.ack_type == pb.CommandAck.Cumulative
            # An ack_set with bits still set acknowledges some messages of a batch only.
            positions = [commands.position_of(mid) for mid in request.message_id
                         if not any(mid.ack_set)]
            partial = [(commands.position_of(mid), list(mid.ack_set))
                       for mid in request.message_id if any(mid.ack_set)]
            try:
                if positions:
                    await handle.subscription.acknowledge(handle.consumer, positions, cumulative)
                for position, ack_set in partial:
                    await handle.subscription.acknowledge_batch_indexes(
                        handle.consumer, position, ack_set, cumulative)
            except Exception as exc:  # noqa: BLE001 - reported in the ACK_RESPONSE
                error = exc
                log.info("ack on %s failed: %s", handle.topic, exc)
        if request.HasField("request_id"):
            self.cnx.write(replies.ack_response(
                request.consumer_id, request.request_id,
                code=None if error is None else commands.server_error_of(error),
                message=None if error is None else str(error)))

    def redeliver(self, received: frame.Frame) -> None:
        request = received.command.redeliverUnacknowledgedMessages
        handle = self.cnx.consumers.get(request.consumer_id)
        if handle is None:
            return
        positions = [commands.position_of(m) for m in request.message_ids] or None
        handle.subscription.redeliver(handle.consumer, positions)

    def unsubscribe(self, received: frame.Frame) -> None:
        request = received.command.unsubscribe
        self.cnx.spawn(self._unsubscribe(request), request.request_id)

    async def _unsubscribe(self, request: pb.CommandUnsubscribe) -> None:
        handle = self.cnx.consumers.get(request.consumer_id)
        if handle is None:
            self.cnx.write(replies.success(request.request_id))
            return
        others = [c for c in handle.subscription.consumers if c is not handle.consumer]
        if others and not request.force:
            self.cnx.write(replies.error(request.request_id, pb.UnknownError,
                                          "Subscription has other connected consumers"))
            return
        self.cnx.consumers.pop(request.consumer_id, None)
        handle.subscription.remove_consumer(handle.consumer)
        await handle.topic.unsubscribe(handle.subscription.name, force=True)
        self.cnx.write(replies.success(request.request_id))

    def close_consumer(self, received: frame.Frame) -> None:
        request = received.command.close_consumer
        self.cnx.spawn(self._close_consumer(request), request.request_id)

    async def _close_consumer(self, request: pb.CommandCloseConsumer) -> None:
        handle = self.cnx.consumers.pop(request.consumer_id, None)
        if handle is not None:
            await self.remove_consumer(handle)
        self.cnx.write(replies.success(request.request_id))

    async def remove_consumer(self, handle: ConsumerHandle) -> None:
        """Detach a consumer; a durable subscription left without consumers persists its
        acknowledgements before the close is confirmed."""
        subscription = handle.subscription
        subscription.remove_consumer(handle.consumer)
        if isinstance(subscription, NonPersistentSubscription):
            assert isinstance(handle.topic, NonPersistentTopic)
            await handle.topic.remove_subscription_if_idle(subscription)
            return
        if subscription.durable and not subscription.consumers:
            await subscription.cursor.flush()
        assert isinstance(handle.topic, PersistentTopic)
        await handle.topic.remove_subscription_if_idle(subscription)

    def seek(self, received: frame.Frame) -> None:
        request = received.command.seek
        self.cnx.spawn(self._seek(request), request.request_id)

    async def _seek(self, request: pb.CommandSeek) -> None:
        handle = self.cnx.consumers.get(request.consumer_id)
        if handle is None:
            raise errors.NotFoundError("Consumer not found")
        if isinstance(handle.subscription, NonPersistentSubscription):
            raise not_supported("Seek")
        cursor = handle.subscription.cursor
        if request.HasField("message_publish_time"):
            timestamp = request.message_publish_time
            before = entry_info.published_before(timestamp)
            found = await cursor.find_newest_matching(lambda e: before(e.data))
            target = ml.EARLIEST if found is None else ml.Position(found.ledger_id,
                                                                   found.entry_id + 1)
        else:
            target = commands.position_of(request.message_id)
            if target.ledger_id < 0:
                target = ml.EARLIEST
        await handle.subscription.reset_cursor(target)
        self.cnx.write(replies.success(request.request_id))

    def get_last_message_id(self, received: frame.Frame) -> None:
        request = received.command.getLastMessageId
        self.cnx.spawn(self._get_last_message_id(request), request.request_id)

    async def _get_last_message_id(self, request: pb.CommandGetLastMessageId) -> None:
        handle = self.cnx.consumers.get(request.consumer_id)
        if handle is None:
            raise errors.NotFoundError("Consumer not found")
        if isinstance(handle.subscription, NonPersistentSubscription):
            raise not_supported("GetLastMessageId")
        last, data = await handle.topic.last_entry(handle.subscription.cursor)
        batch_index = -1
        if data is not None:
            metadata = entry_info.parse_metadata(data)
            if metadata.HasField("num_messages_in_batch"):
                batch_index = metadata.num_messages_in_batch - 1
        last_id = wire_entry.message_id(last.ledger_id, last.entry_id,
                                        partition=handle.topic.name.partition_index,
                                        batch_index=batch_index)
        mark_delete = handle.subscription.cursor.mark_delete_position
        self.cnx.write(replies.get_last_message_id_response(
            request.request_id, last_id,
            consumer_mark_delete_position=wire_entry.message_id(mark_delete.ledger_id,
                                                                mark_delete.entry_id)))

    def get_topics_of_namespace(self, received: frame.Frame) -> None:
        request = received.command.getTopicsOfNamespace
        self.cnx.spawn(self._get_topics_of_namespace(request), request.request_id)

    async def _get_topics_of_namespace(self, request: pb.CommandGetTopicsOfNamespace) -> None:
        ns = naming.NamespaceName.parse(request.namespace)
        await self.cnx.security.check_namespace(ns, authz.NamespaceOperation.GET_TOPICS)
        mode = pb.CommandGetTopicsOfNamespace.Mode.Name(request.mode)
        topics = await self.service.topics_of_namespace(ns, mode)
        # Unfiltered: the client applies its own pattern.
        self.cnx.write(replies.get_topics_of_namespace_response(request.request_id, topics))

    # Schemas

    def get_schema(self, received: frame.Frame) -> None:
        request = received.command.getSchema
        self.cnx.spawn(self._get_schema(request), None)

    async def _get_schema(self, request: pb.CommandGetSchema) -> None:
        refusal = await self.cnx.security.topic_refusal(request.topic,
                                                        authz.TopicOperation.LOOKUP)
        if refusal is not None:
            self.cnx.write(replies.get_schema_error(request.request_id, pb.AuthorizationError,
                                                    refusal))
            return
        self.cnx.write(await schema_commands.get_schema(self.service, request))

    def get_or_create_schema(self, received: frame.Frame) -> None:
        request = received.command.getOrCreateSchema
        self.cnx.spawn(self._get_or_create_schema(request), None)

    async def _get_or_create_schema(self, request: pb.CommandGetOrCreateSchema) -> None:
        refusal = await self.cnx.security.topic_refusal(request.topic,
                                                        authz.TopicOperation.PRODUCE)
        if refusal is not None:
            self.cnx.write(replies.get_or_create_schema_response(
                request.request_id, code=pb.AuthorizationError, message=refusal))
            return
        self.cnx.write(await schema_commands.get_or_create_schema(self.service, request))

    def consumer_stats(self, received: frame.Frame) -> None:
        request = received.command.consumerStats
        reply = pb.BaseCommand(type=T.CONSUMER_STATS_RESPONSE)
        response = reply.consumerStatsResponse
        response.request_id = request.request_id
        handle = self.cnx.consumers.get(request.consumer_id)
        if handle is None:
            response.error_code = pb.ConsumerNotFound
            response.error_message = "Consumer not found"
        else:
            response.consumerName = handle.consumer.consumer_name
            response.availablePermits = handle.consumer.permits
            response.unackedMessages = handle.consumer.unacked_messages
            response.msgBacklog = (
                0 if isinstance(handle.subscription, NonPersistentSubscription)
                else handle.subscription.cursor.number_of_entries_in_backlog)
            response.type = handle.subscription.sub_type.name.title().replace("_", "_")
        self.cnx.write(reply)

