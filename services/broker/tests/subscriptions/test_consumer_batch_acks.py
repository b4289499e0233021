"""A consumer sent a partly acknowledged batch: the MESSAGE carries the ack set, and only the
messages still to deliver use permits and count as unacknowledged."""

from __future__ import annotations

from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import (
    Consumer,
    Dispatched,
    SubType,
    unacknowledged_in,
)


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
