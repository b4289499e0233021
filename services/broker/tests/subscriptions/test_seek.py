"""A seek (reset of the subscription's cursor) racing the consumers' acknowledgements, in
process over a real managed ledger.

The official client sends its grouped acknowledgements on a timer, so an ACK frame can reach
the broker after the SEEK frame. The seek persists the moved cursor (a metadata write that
yields); whatever the broker still takes from the consumers connected before the seek must
not land on the moved cursor, or the entries the seek was meant to replay are lost.
"""

from __future__ import annotations

import asyncio
import pathlib
import struct
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import Consumer, SubType
from pulsar_broker.subscriptions.subscription import Subscription
from pulsar_common import clock
from pulsar_common.wire import pulsar_api_pb2 as pb

NAME = "public/default/persistent/seek-race"


class Connection:
    """The consumer side of a connection: the consumers registered on it by id (as the
    broker's connection keeps them; a CLOSE_CONSUMER forgets the id) and the entries sent."""

    remote_address = "test"
    writable = True

    def __init__(self) -> None:
        self.consumers: dict[int, Consumer] = {}
        self.sent: list[ml.Position] = []

    def send_message(self, consumer_id: int, position: ml.Position, redelivery_count: int,
                     data: bytes, partition: int, ack_set: Any = None) -> None:
        self.sent.append(position)

    def send_active_consumer_change(self, consumer_id: int, is_active: bool) -> None:
        pass

    def send_close_consumer(self, consumer_id: int) -> None:
        self.consumers.pop(consumer_id, None)

    def connect(self, subscription: Subscription, consumer_id: int) -> Consumer:
        consumer = Consumer(self, consumer_id, "c", SubType.EXCLUSIVE, 0, -1, 0)
        self.consumers[consumer_id] = consumer
        subscription.add_consumer(consumer)
        consumer.flow(1000)
        subscription.dispatcher.wake()
        return consumer

    async def ack(self, subscription: Subscription, consumer_id: int,
                  positions: list[ml.Position]) -> None:
        """An ACK frame: applied only while its consumer id is known, as the broker does."""
        consumer = self.consumers.get(consumer_id)
        if consumer is not None:
            await subscription.acknowledge(consumer, positions, False)


def entry_bytes(sequence_id: int) -> bytes:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1)
    raw = metadata.SerializeToString()
    return struct.pack(">I", len(raw)) + raw + b"payload-%d" % sequence_id


async def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s}s"
        await asyncio.sleep(0.01)


@pytest.fixture
async def topic(tmp_path: pathlib.Path) -> AsyncIterator[tuple[ml.ManagedLedger, Subscription]]:
    """A managed ledger and an Exclusive subscription on it."""
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, clock.ManualClock())
    ledger = await stack.factory.open(NAME)
    cursor = await ledger.open_cursor("sub", ml.InitialPosition.EARLIEST)
    subscription = Subscription(NAME, "sub", cursor, SubType.EXCLUSIVE, -1, 100)
    yield ledger, subscription
    await subscription.close()
    await stack.stop()


async def test_an_ack_arriving_during_a_seek_does_not_hide_the_replayed_entries(
        topic: tuple[ml.ManagedLedger, Subscription]) -> None:
    ledger, subscription = topic
    positions = [await ledger.add_entry(entry_bytes(i)) for i in range(10)]
    cnx = Connection()
    cnx.connect(subscription, 1)
    await wait_for(lambda: len(cnx.sent) == 10, "first delivery")
    await cnx.ack(subscription, 1, positions[:5])

    seek = asyncio.ensure_future(subscription.reset_cursor(positions[5]))
    await asyncio.sleep(0)  # the seek runs until it waits on persisting the moved cursor
    assert not seek.done(), "the seek no longer yields: this test no longer opens the window"
    # The client's ack timer fires now: the rest of what it received goes out after the SEEK.
    await cnx.ack(subscription, 1, positions[5:])
    await seek

    cursor = subscription.cursor
    assert [p for p in positions[5:] if cursor.is_acknowledged(p)] == []
    assert cursor.number_of_entries_in_backlog == 5
    # The client reconnects after the seek and gets what follows the seek position again.
    again = Connection()
    again.connect(subscription, 2)
    await wait_for(lambda: len(again.sent) == 5, "replay after the seek")
    assert again.sent == positions[5:]
