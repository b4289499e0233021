"""A persistent topic: producers append entries to its managed ledger; subscriptions read.

The entry stored is the producer's `metadataSize | metadata | payload` bytes,
unchanged. After each append the subscriptions' dispatchers are woken.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import time
from collections.abc import Callable
from typing import Any

from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import dispatcher as dispatch
from pulsar_broker.subscriptions.consumer import SubType
from pulsar_broker.subscriptions.subscription import Subscription
from pulsar_broker.topics import deduplication, policies
from pulsar_broker.web import hooks


class Producer:
    def __init__(self, producer_id: int, name: str, remote_address: str,
                 disconnect: Callable[[], None] | None = None) -> None:
        self.producer_id = producer_id
        #: Tells the client its producer is closed (CLOSE_PRODUCER), so it reconnects.
        self.disconnect = disconnect
        self.name = name
        self.remote_address = remote_address
        self.msg_in = 0
        self.bytes_in = 0
        self.connected_since = time.time()


class PersistentTopic:
    def __init__(self, name: naming.TopicName, ledger: ml.ManagedLedger, max_read_batch: int,
                 track_redeliveries: bool = True,
                 max_read_bytes: int = dispatch.MAX_READ_BYTES) -> None:
        self.name = name
        self.ledger = ledger
        self.max_read_batch = max_read_batch
        self.max_read_bytes = max_read_bytes
        self.track_redeliveries = track_redeliveries
        self.producers: dict[int, Producer] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self._producer_ids = itertools.count()
        self.msg_in = 0
        self.bytes_in = 0
        self.closed = False
        self._metric_name = str(name)
        self.deduplication: deduplication.MessageDeduplication | None = None
        #: The namespace's policies as they apply here (kept current by the PolicyEnforcer).
        self.policies = policies.TopicPolicies()

    def __str__(self) -> str:
        return str(self.name)

    # Producing

    def add_producer(self, name: str, remote_address: str,
                     disconnect: Callable[[], None] | None = None) -> Producer:
        if self.closed:
            raise errors.ServiceNotReadyError(f"Topic {self.name} is closing")
        producer = Producer(next(self._producer_ids), name, remote_address, disconnect)
        self.producers[producer.producer_id] = producer
        return producer

    def remove_producer(self, producer: Producer) -> None:
        self.producers.pop(producer.producer_id, None)

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
        hooks.record_add_entry_latency(self._metric_name, time.perf_counter() - started)
        producer.msg_in += num_messages
        producer.bytes_in += size
        self.msg_in += num_messages
        self.bytes_in += size
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
    ) -> Subscription:
        existing = self.subscriptions.get(name)
        if existing is not None:
            return existing
        if durable:
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
            cursor = self.ledger.new_non_durable_cursor(start_message_id, name,
                                                        inclusive=start_inclusive)
        subscription = Subscription(
            str(self.name), name, cursor, sub_type, self.name.partition_index,
            self.max_read_batch, self.track_redeliveries, delayed_settings=self.policies.delayed,
            max_read_bytes=self.max_read_bytes,
        )
        self.subscriptions[name] = subscription
        return subscription

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
            max_read_bytes=self.max_read_bytes)

    async def enable_deduplication(self) -> None:
        self.deduplication = deduplication.MessageDeduplication(self.ledger)
        await self.deduplication.load()

    async def load_durable_subscriptions(self) -> None:
        """Subscriptions live on as cursors: make them visible after a restart."""
        for cursor in self.ledger.cursors:
            if cursor.name == deduplication.CURSOR_NAME:
                continue
            if cursor.durable and cursor.name not in self.subscriptions:
                self.subscriptions[cursor.name] = Subscription(
                    str(self.name), cursor.name, cursor, SubType.EXCLUSIVE,
                    self.name.partition_index, self.max_read_batch, self.track_redeliveries,
                    delayed_settings=self.policies.delayed, max_read_bytes=self.max_read_bytes)

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
        for subscription in list(self.subscriptions.values()):
            await subscription.close()
        self.subscriptions.clear()
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
        await self.ledger.delete()

    # Stats

    def stats(self) -> dict[str, Any]:
        return {
            "msgRateIn": 0.0,
            "msgThroughputIn": 0.0,
            "msgRateOut": 0.0,
            "msgThroughputOut": 0.0,
            "msgInCounter": self.msg_in,
            "bytesInCounter": self.bytes_in,
            "averageMsgSize": (self.bytes_in / self.msg_in) if self.msg_in else 0.0,
            "storageSize": self.ledger.total_size,
            "backlogSize": self.backlog_size(),
            "publishers": [
                {"producerId": p.producer_id, "producerName": p.name, "msgInCounter": p.msg_in,
                 "bytesInCounter": p.bytes_in, "address": p.remote_address}
                for p in self.producers.values()
            ],
            "subscriptions": {name: s.stats() for name, s in self.subscriptions.items()},
            "replication": {},
            "deduplicationStatus": "Enabled" if self.deduplication else "Disabled",
        }

    def backlog_size(self) -> int:
        """Estimated bytes the slowest subscription has not acknowledged."""
        from pulsar_broker.topics import backlog_quota

        return backlog_quota.backlog_size(self)

    def internal_stats(self) -> dict[str, Any]:
        ledger = self.ledger
        return {
            "entriesAddedCounter": ledger.number_of_entries,
            "numberOfEntries": ledger.number_of_entries,
            "totalSize": ledger.total_size,
            "currentLedgerEntries": ledger.ledgers[-1].entries if ledger.ledgers else 0,
            "currentLedgerSize": ledger.ledgers[-1].size if ledger.ledgers else 0,
            "lastConfirmedEntry": str(ledger.last_confirmed_entry),
            "state": "Terminated" if ledger.is_terminated else "LedgerOpened",
            "ledgers": [
                {"ledgerId": info.ledger_id, "entries": info.entries, "size": info.size,
                 "timestamp": info.timestamp_ms}
                for info in ledger.ledgers
            ],
            "cursors": {
                c.name: {
                    "markDeletePosition": str(c.mark_delete_position),
                    "readPosition": str(c.read_position),
                    "individuallyDeletedMessages": "["
                    + ", ".join(f"({lo}..{hi}]" for lo, hi in c.individually_deleted_ranges)
                    + "]",
                    "numberOfEntriesSinceFirstNotAckedMessage": c.number_of_entries_in_backlog,
                    "properties": c.properties,
                }
                for c in ledger.cursors
            },
        }
