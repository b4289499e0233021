"""Each subscription type's delivery model over a real managed ledger, in process: who gets
which entry, and what a redelivery or a leaving consumer does to order."""

from __future__ import annotations

import asyncio
import pathlib
import struct
import time
from collections.abc import AsyncIterator, Callable

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import key_shared, selection, shared, single_active
from pulsar_broker.subscriptions.consumer import Consumer, SubType
from pulsar_broker.subscriptions.subscription import Subscription, new_dispatcher
from pulsar_common import clock
from pulsar_common.wire import pulsar_api_pb2 as pb

NAME = "public/default/persistent/delivery-models"


def entry(sequence_id: int, key: str = "") -> bytes:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1)
    if key:
        metadata.partition_key = key
    raw = metadata.SerializeToString()
    return struct.pack(">I", len(raw)) + raw + b"payload-%d" % sequence_id


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


async def subscribe(ledger: ml.ManagedLedger, sub_type: SubType) -> Subscription:
    cursor = await ledger.open_cursor(f"sub-{sub_type.name}", ml.InitialPosition.EARLIEST)
    return Subscription(NAME, cursor.name, cursor, sub_type, -1, 100)


def connect(subscription: Subscription, cnx: broker_testing.RecordingConnection,
            consumer_id: int, name: str, permits: int = 1000) -> Consumer:
    consumer = Consumer(cnx, consumer_id, name, subscription.sub_type, 0, -1, 0)
    subscription.add_consumer(consumer)
    consumer.flow(permits)
    subscription.dispatcher.wake()
    return consumer


@pytest.mark.parametrize(("sub_type", "model"), [
    (SubType.EXCLUSIVE, single_active.SingleActiveDispatcher),
    (SubType.FAILOVER, single_active.SingleActiveDispatcher),
    (SubType.SHARED, shared.SharedDispatcher),
    (SubType.KEY_SHARED, key_shared.KeySharedDispatcher),
])
async def test_each_subscription_type_gets_its_own_delivery_model(
        ledger: ml.ManagedLedger, sub_type: SubType, model: type) -> None:
    cursor = await ledger.open_cursor("s", ml.InitialPosition.EARLIEST)
    made = new_dispatcher(cursor, sub_type, partition_index=-1, max_read_batch=10,
                          redelivery_count=lambda p: 0)
    assert type(made) is model
    await made.close()


async def test_failover_sends_everything_to_the_active_consumer_and_replays_in_order_when_it_leaves(
        ledger: ml.ManagedLedger) -> None:
    positions = [await ledger.add_entry(entry(i)) for i in range(4)]
    subscription = await subscribe(ledger, SubType.FAILOVER)
    first_cnx, second_cnx = broker_testing.RecordingConnection(), broker_testing.RecordingConnection()
    first = connect(subscription, first_cnx, 1, "a")
    connect(subscription, second_cnx, 2, "b")
    try:
        await wait_for(lambda: len(first_cnx.sent) == 4, "the active consumer's entries")
        assert second_cnx.sent == [] and first_cnx.active[1] and not second_cnx.active[2]
        await subscription.acknowledge(first, positions[:1], cumulative=True)
        subscription.remove_consumer(first)
        await wait_for(lambda: len(second_cnx.sent) == 3, "the unacknowledged entries")
        assert second_cnx.sent == positions[1:]
    finally:
        await subscription.close()


async def test_shared_spreads_entries_round_robin_and_hands_a_leavers_entries_to_the_rest(
        ledger: ml.ManagedLedger) -> None:
    subscription = await subscribe(ledger, SubType.SHARED)
    a_cnx, b_cnx = broker_testing.RecordingConnection(), broker_testing.RecordingConnection()
    a = connect(subscription, a_cnx, 1, "a")
    connect(subscription, b_cnx, 2, "b")
    positions = [await ledger.add_entry(entry(i)) for i in range(4)]
    subscription.new_entries()
    try:
        await wait_for(lambda: len(a_cnx.sent) + len(b_cnx.sent) == 4, "every entry")
        assert len(a_cnx.sent) == len(b_cnx.sent) == 2
        subscription.remove_consumer(a)
        await wait_for(lambda: len(b_cnx.sent) == 4, "the leaver's entries")
        assert sorted(b_cnx.sent) == positions
        redelivered = [(p, count) for _, p, count in b_cnx.messages[2:]]
        assert all(count == 1 for _, count in redelivered)
    finally:
        await subscription.close()


async def test_key_shared_keeps_a_key_on_one_consumer_and_in_order_while_it_has_no_permits(
        ledger: ml.ManagedLedger) -> None:
    subscription = await subscribe(ledger, SubType.KEY_SHARED)
    a_cnx, b_cnx = broker_testing.RecordingConnection(), broker_testing.RecordingConnection()
    a = connect(subscription, a_cnx, 1, "a", permits=1)
    connect(subscription, b_cnx, 2, "b")
    dispatcher = subscription.dispatcher
    assert isinstance(dispatcher, key_shared.KeySharedDispatcher)
    owner_of = {key: dispatcher.ranges.owner(selection.sticky_key_hash(key.encode()))
                for key in ("k0", "k1", "k2", "k3", "k4", "k5")}
    a_key = next(k for k, owner in owner_of.items() if owner is a)
    a_positions = [await ledger.add_entry(entry(i, a_key)) for i in range(3)]
    subscription.new_entries()
    try:
        await wait_for(lambda: len(a_cnx.sent) == 1, "the first entry of a's key")
        a.flow(10)
        subscription.dispatcher.wake()
        await wait_for(lambda: len(a_cnx.sent) == 3, "the rest of a's key")
        assert a_cnx.sent == a_positions and b_cnx.sent == []
    finally:
        await subscription.close()


async def test_exclusive_redelivery_rewinds_to_the_first_unacknowledged_entry(
        ledger: ml.ManagedLedger) -> None:
    positions = [await ledger.add_entry(entry(i)) for i in range(3)]
    subscription = await subscribe(ledger, SubType.EXCLUSIVE)
    cnx = broker_testing.RecordingConnection()
    consumer = connect(subscription, cnx, 1, "a")
    try:
        await wait_for(lambda: len(cnx.sent) == 3, "every entry")
        await subscription.acknowledge(consumer, positions[:1], cumulative=False)
        subscription.redeliver(consumer, None)
        await wait_for(lambda: len(cnx.sent) == 5, "the redelivery")
        assert cnx.sent[3:] == positions[1:]
    finally:
        await subscription.close()


async def test_key_shared_with_consistent_hashing_gives_each_key_the_owner_on_the_ring(
        ledger: ml.ManagedLedger) -> None:
    cursor = await ledger.open_cursor("ring", ml.InitialPosition.EARLIEST)
    subscription = Subscription(NAME, cursor.name, cursor, SubType.KEY_SHARED, -1, 100,
                                key_shared_replica_points=50)
    cnxs = {name: broker_testing.RecordingConnection() for name in ("a", "b", "c")}
    consumers = {name: connect(subscription, cnx, i, name)
                 for i, (name, cnx) in enumerate(cnxs.items())}
    dispatcher = subscription.dispatcher
    assert isinstance(dispatcher, key_shared.KeySharedDispatcher)
    keys = [f"key-{i}" for i in range(30)]
    positions = {key: await ledger.add_entry(entry(i, key)) for i, key in enumerate(keys)}
    subscription.new_entries()
    try:
        await wait_for(lambda: sum(len(c.sent) for c in cnxs.values()) == 30, "every entry")
        for key, position in positions.items():
            owner = dispatcher.ranges.owner(selection.murmur3_32(key.encode()))
            assert owner is not None
            assert position in cnxs[owner.consumer_name].sent
        assert all(cnx.sent for cnx in cnxs.values())  # 30 keys over 3 consumers: all used
        assert {c.consumer_name for c in consumers.values()} == set(cnxs)
    finally:
        await subscription.close()


async def test_the_dispatcher_counts_what_it_reads_and_replays_from_the_ledger(
        ledger: ml.ManagedLedger) -> None:
    subscription = await subscribe(ledger, SubType.SHARED)
    a_cnx, b_cnx = broker_testing.RecordingConnection(), broker_testing.RecordingConnection()
    a = connect(subscription, a_cnx, 1, "a")
    connect(subscription, b_cnx, 2, "b")
    data = [entry(i) for i in range(4)]
    for payload in data:
        await ledger.add_entry(payload)
    subscription.new_entries()
    try:
        await wait_for(lambda: len(a_cnx.sent) + len(b_cnx.sent) == 4, "every entry")
        dispatcher = subscription.dispatcher
        assert (dispatcher.entries_read, dispatcher.bytes_read) == (4, sum(map(len, data)))
        subscription.remove_consumer(a)  # a's two entries are read again for b
        await wait_for(lambda: len(b_cnx.sent) == 4, "the leaver's entries")
        assert dispatcher.entries_read == 6
        assert dispatcher.bytes_read == sum(map(len, data)) + 2 * len(data[0])
    finally:
        await subscription.close()
