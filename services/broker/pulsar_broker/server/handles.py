"""What a connection keeps of each producer and consumer it serves.

The connection holds these by id and the command handlers create and use
them; they live apart from both so the handlers need not import the
connection that dispatches to them.
"""

from __future__ import annotations

import asyncio
import collections

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import Consumer
from pulsar_broker.subscriptions.subscription import Subscription
from pulsar_broker.topics.non_persistent.subscription import NonPersistentSubscription
from pulsar_broker.topics.non_persistent.topic import NonPersistentTopic
from pulsar_broker.topics.persistent_topic import PersistentTopic, Producer


class ProducerHandle:
    """A producer as this connection sees it: receipts go back strictly in SEND order."""

    def __init__(self, producer_id: int, topic: PersistentTopic | NonPersistentTopic,
                 producer: Producer,
                 schema_version: bytes | None = None) -> None:
        self.producer_id = producer_id
        self.topic = topic
        self.producer = producer
        #: The schema version it writes with, as PRODUCER_SUCCESS announced it.
        self.schema_version = schema_version
        self.in_flight: collections.deque[tuple[asyncio.Future[ml.Position], int, int, int]] = (
            collections.deque())
        self.closed = False
        #: A publish failed: the connection is closing, later failures are not reported.
        self.failed = False


class ConsumerHandle:
    def __init__(self, topic: PersistentTopic | NonPersistentTopic,
                 subscription: Subscription | NonPersistentSubscription,
                 consumer: Consumer) -> None:
        self.topic = topic
        self.subscription = subscription
        self.consumer = consumer
