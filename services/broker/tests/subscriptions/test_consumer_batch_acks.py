"""A consumer sent a partly acknowledged batch: the MESSAGE carries the ack set, and only the
messages still to deliver use permits and count as unacknowledged."""

from __future__ import annotations

import pathlib

import pytest
from pulsar_broker import errors
from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import (
    Consumer,
    Dispatched,
    SubType,
    unacknowledged_in,
)
from pulsar_broker.subscriptions.subscription import Subscription
from pulsar_common import clock


def test_unacknowledged_messages_are_the_set_bits_of_every_word_sign_bit_included() -> None:
    assert unacknowledged_in([]) == 0
    assert unacknowledged_in([0b1011]) == 3
    assert unacknowledged_in([-1, 0b1]) == 65


def test_a_partly_acknowledged_batch_uses_permits_for_its_unacknowledged_messages_only() -> None:
    cnx = broker_testing.RecordingConnection()
    consumer = Consumer(cnx, 7, "c", SubType.SHARED, 0, -1, 0)
    consumer.flow(100)
    batch = Dispatched(ml.Entry(ml.Position(3, 4), b"batch"), num_messages=10, sticky_key=b"")
    consumer.send(batch, 0, (0b1100000000,))
    assert consumer.permits == 98 and consumer.unacked_messages == 2
    assert cnx.ack_sets == [(0b1100000000,)]
    consumer.partly_acknowledged(ml.Position(3, 4), 1)
    assert consumer.unacked_messages == 1
    consumer.send(batch, 1)
    assert consumer.permits == 88 and consumer.unacked_messages == 10
    assert cnx.ack_sets[-1] is None


async def test_a_cumulative_ack_inside_a_batch_acks_the_entries_before_it_and_part_of_it(
        tmp_path: pathlib.Path) -> None:
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, clock.ManualClock())
    try:
        ledger = await stack.factory.open("public/default/persistent/cumulative-batch")
        cursor = await ledger.open_cursor("sub", ml.InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"entry-%d" % i) for i in range(3)]
        subscription = Subscription("t", "sub", cursor, SubType.EXCLUSIVE, -1, 100)
        consumer = Consumer(broker_testing.RecordingConnection(), 1, "c", SubType.EXCLUSIVE,
                            0, -1, 0)
        # Messages 0 and 1 of the batch at p[1] are covered; 2 and 3 are not.
        await subscription.acknowledge_batch_indexes(consumer, p[1], [0b1100], True)
        assert cursor.mark_delete_position == p[0]
        assert cursor.batch_ack_set(p[1]) == (0b1100,)
        await subscription.acknowledge_batch_indexes(consumer, p[1], [0b0000], True)
        assert cursor.mark_delete_position == p[1]
        await subscription.close()
    finally:
        await stack.stop()


async def test_a_cumulative_ack_inside_a_batch_opening_a_ledger_acks_the_earlier_ledgers(
        tmp_path: pathlib.Path) -> None:
    stack = await broker_testing.start_managed_ledger_stack(
        tmp_path, clock.ManualClock(), max_entries_per_ledger=2)
    try:
        ledger = await stack.factory.open("public/default/persistent/cumulative-new-ledger")
        cursor = await ledger.open_cursor("sub", ml.InitialPosition.EARLIEST)
        p = [await ledger.add_entry(b"entry-%d" % i) for i in range(4)]
        assert p[2].ledger_id != p[1].ledger_id and p[2].entry_id == 0
        subscription = Subscription("t", "sub", cursor, SubType.EXCLUSIVE, -1, 100)
        consumer = Consumer(broker_testing.RecordingConnection(), 1, "c", SubType.EXCLUSIVE,
                            0, -1, 0)
        await subscription.acknowledge_batch_indexes(consumer, p[2], [0b110], True)
        assert cursor.is_acknowledged(p[1]) and not cursor.is_acknowledged(p[2])
        assert cursor.number_of_entries_in_backlog == 2
        assert [e.position for e in await cursor.read_entries(10)] == p[2:]
        await subscription.close()
    finally:
        await stack.stop()


async def test_a_cumulative_ack_is_refused_on_a_shared_subscription(
        tmp_path: pathlib.Path) -> None:
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, clock.ManualClock())
    try:
        ledger = await stack.factory.open("public/default/persistent/cumulative-shared")
        cursor = await ledger.open_cursor("sub", ml.InitialPosition.EARLIEST)
        position = await ledger.add_entry(b"entry")
        subscription = Subscription("t", "sub", cursor, SubType.SHARED, -1, 100)
        consumer = Consumer(broker_testing.RecordingConnection(), 1, "c", SubType.SHARED,
                            0, -1, 0)
        with pytest.raises(errors.InvalidRequestError):
            await subscription.acknowledge_batch_indexes(consumer, position, [0b10], True)
        await subscription.close()
    finally:
        await stack.stop()


@pytest.mark.parametrize("sub_type", [SubType.SHARED, SubType.KEY_SHARED])
def test_a_consumer_at_its_unacked_limit_is_unblocked_only_at_half_of_it(sub_type) -> None:
    # maxUnackedMessagesPerConsumer = 10: as Apache's consumer, blocked at 10 and
    # unblocked once acknowledgements bring it down to 5, not at 9.
    consumer = Consumer(broker_testing.RecordingConnection(), 7, "c", sub_type, 0, -1, 10)
    consumer.flow(100)
    for entry_id in range(10):
        assert consumer.available
        consumer.send(Dispatched(ml.Entry(ml.Position(1, entry_id), b"m"), 1, b""), 0)
    assert not consumer.available and consumer.blocked_on_unacked
    for entry_id in range(4):
        consumer.acknowledged(ml.Position(1, entry_id))
        assert not consumer.available
    consumer.acknowledged(ml.Position(1, 4))
    assert consumer.unacked_messages == 5 and consumer.available
    consumer.send(Dispatched(ml.Entry(ml.Position(1, 10), b"m"), 1, b""), 0)
    assert consumer.available


def test_the_block_is_set_when_the_limit_is_reached_even_if_no_one_asked_in_between() -> None:
    consumer = Consumer(broker_testing.RecordingConnection(), 7, "c", SubType.SHARED, 0, -1, 4)
    consumer.flow(100)
    consumer.send(Dispatched(ml.Entry(ml.Position(1, 0), b"b"), 4, b""), 0)
    consumer.acknowledged(ml.Position(1, 0))
    assert consumer.available  # 0 unacked: below half
    consumer.send(Dispatched(ml.Entry(ml.Position(1, 1), b"b"), 4, b""), 0)
    consumer.partly_acknowledged(ml.Position(1, 1), 3)
    assert not consumer.available  # reached 4 when sent; 3 is above half


def test_exclusive_and_failover_consumers_are_not_limited() -> None:
    for sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
        consumer = Consumer(broker_testing.RecordingConnection(), 7, "c", sub_type, 0, -1, 1)
        consumer.flow(10)
        consumer.send(Dispatched(ml.Entry(ml.Position(1, 0), b"m"), 3, b""), 0)
        assert consumer.available
