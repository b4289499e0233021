"""Entries stored before the broker checked SENDs (metadata no client can read, a batch that
cannot hold its count) never stall a subscription: each is acknowledged and skipped, counted
in the subscription's stats, and the good entries after it are delivered. In process over a
real managed ledger, for every subscription type."""

from __future__ import annotations

import asyncio
import pathlib
import struct
import time
from collections.abc import AsyncIterator, Callable

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import Consumer, SubType
from pulsar_broker.subscriptions.subscription import Subscription
from pulsar_common import clock
from pulsar_common.wire import pulsar_api_pb2 as pb

NAME = "public/default/persistent/unreadable"


def good(sequence_id: int) -> bytes:
    raw = pb.MessageMetadata(producer_name="p", sequence_id=sequence_id,
                             publish_time=1).SerializeToString()
    return struct.pack(">I", len(raw)) + raw + b"payload-%d" % sequence_id


def unreadable() -> list[bytes]:
    batch = pb.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                               num_messages_in_batch=1000).SerializeToString()
    return [
        struct.pack(">I", 4) + b"\xff\xff\xff\xff" + b"payload",  # not a protobuf
        struct.pack(">I", 0) + b"payload",  # metadataSize 0: required fields missing
        struct.pack(">I", len(batch)) + batch + b"x" * 16,  # 1000 messages in 16 bytes
    ]


async def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s}s"
        await asyncio.sleep(0.01)


@pytest.fixture
async def ledger(tmp_path: pathlib.Path) -> AsyncIterator[ml.ManagedLedger]:
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, clock.ManualClock())
    yield await stack.factory.open(NAME)
    await stack.stop()


@pytest.mark.parametrize("sub_type", list(SubType))
async def test_unreadable_entries_are_skipped_and_the_good_ones_delivered(
        ledger: ml.ManagedLedger, sub_type: SubType) -> None:
    wanted = [await ledger.add_entry(good(0))]
    for data in unreadable():
        await ledger.add_entry(data)
        wanted.append(await ledger.add_entry(good(len(wanted))))
    cursor = await ledger.open_cursor(f"sub-{sub_type.name}", ml.InitialPosition.EARLIEST)
    subscription = Subscription(NAME, cursor.name, cursor, sub_type, -1, 100)
    cnx = broker_testing.RecordingConnection()
    consumer = Consumer(cnx, 1, "c", sub_type, 0, -1, 0)
    subscription.add_consumer(consumer)
    consumer.flow(1000)
    subscription.dispatcher.wake()
    try:
        await wait_for(lambda: len(cnx.sent) == len(wanted), "the good entries")
        assert cnx.sent == wanted
        await subscription.acknowledge(consumer, wanted, cumulative=False)
        assert cursor.number_of_entries_in_backlog == 0
        assert subscription.stats().unreadable_entries_skipped == 3
    finally:
        await subscription.close()
