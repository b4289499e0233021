"""What a connection keeps of each producer and consumer it serves.

The connection holds these by id and the command handlers create and use
them; they live apart from both so the handlers need not import the
connection that dispatches to them.
"""

from __future__ import annotations

import asyncio
import collections
from typing import TypeAlias

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import Consumer
from pulsar_broker.subscriptions.subscription import Subscription
from pulsar_broker.topics.non_persistent.subscription import NonPersistentSubscription
from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic
from pulsar_broker.topics.persistent_topic import PersistentTopic, Producer

#: A SEND being written: its add, sequence id, highest sequence id, message count.
InFlightSend: TypeAlias = tuple[asyncio.Future[ml.Position], int, int, int]


class ProducerHandle:
    """A producer as this connection sees it: receipts go back strictly in SEND order."""

    __slots__ = ("_in_flight", "closed", "failed", "producer", "producer_id", "schema_version",
                 "topic")

    def __init__(self, producer_id: int, topic: PersistentTopic | NonPersistentTopic,
                 producer: Producer,
                 schema_version: bytes | None = None) -> None:
        self.producer_id = producer_id
        self.topic = topic
        self.producer = producer
        #: The schema version it writes with, as PRODUCER_SUCCESS announced it.
        self.schema_version = schema_version
        self._in_flight: collections.deque[InFlightSend] | None = None
        self.closed = False
        #: A publish failed: the connection is closing, later failures are not reported.
        self.failed = False

    @property
    def in_flight(self) -> collections.deque[InFlightSend]:
        """SENDs not answered yet, oldest first; made on the first SEND (an empty deque costs
        ~760 bytes, and a producer that never sends need not hold one, issue 16)."""
        in_flight = self._in_flight
        if in_flight is None:
            in_flight = self._in_flight = collections.deque()
        return in_flight


class ConsumerHandle:
    __slots__ = ("consumer", "subscription", "topic")

    def __init__(self, topic: PersistentTopic | NonPersistentTopic,
                 subscription: Subscription | NonPersistentSubscription,
                 consumer: Consumer) -> None:
        self.topic = topic
        self.subscription = subscription
        self.consumer = consumer
