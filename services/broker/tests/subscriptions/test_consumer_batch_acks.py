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
