"""The Shared dispatcher with delayed entries, in process over a real managed ledger:
nothing is lost or delivered twice, nothing goes out before its time."""

from __future__ import annotations

import asyncio
import random
import struct
import time
from typing import Any

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import delayed_delivery as dd
from pulsar_broker.subscriptions.consumer import Consumer, SubType
from pulsar_broker.subscriptions.shared import SharedDispatcher
from pulsar_common import clock
from pulsar_common.wire import pulsar_api_pb2 as pb

TICK_MS = 10


#: Wall-clock time, as the delayed-delivery tracker reads it.
now_ms = clock.wall_clock_ms


def entry_bytes(sequence_id: int, deliver_at_ms: int) -> bytes:
    metadata = pb.MessageMetadata(producer_name="p", sequence_id=sequence_id, publish_time=1)
    if deliver_at_ms:
        metadata.deliver_at_time = deliver_at_ms
    raw = metadata.SerializeToString()
    return struct.pack(">I", len(raw)) + raw + b"payload-%d" % sequence_id


class Connection:
    """Records the MESSAGE frames a consumer would send, with the time they went out."""

    remote_address = "test"
    writable = True

    def __init__(self) -> None:
        self.sent: list[tuple[ml.Position, int]] = []
        self.arrived = asyncio.Event()

    def send_message(self, consumer_id: int, position: ml.Position, redelivery_count: int,
                     data: bytes, partition: int, ack_set: Any = None) -> None:
        self.sent.append((position, now_ms()))
        self.arrived.set()

    def send_active_consumer_change(self, consumer_id: int, is_active: bool) -> None:
        pass

    def send_close_consumer(self, consumer_id: int) -> None:
        pass


async def wait_for(condition, timeout_s: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def shared_dispatcher(factory: ml.ManagedLedgerFactory, name: str,
                            read_batch: int) -> tuple[ml.ManagedLedger, SharedDispatcher]:
    """A ledger and a Shared dispatcher over a cursor from its start, delayed delivery on."""
    ledger = await factory.open(f"public/default/persistent/{name}")
    cursor = await ledger.open_cursor("sub", ml.InitialPosition.EARLIEST)
    return ledger, SharedDispatcher(
        cursor, partition_index=-1, max_read_batch=read_batch, redelivery_count=lambda p: 0,
        delayed_settings=dd.DelayedDeliverySettings(tick_ms=TICK_MS))


def consumer(cnx: Connection, permits: int = 1000) -> Consumer:
    c = Consumer(cnx, 1, "c", SubType.SHARED, 0, -1, 0)
    c.flow(permits)
    return c


async def test_every_entry_goes_out_once_and_not_before_its_time(managed_ledger_factory):
    ledger, dispatcher = await shared_dispatcher(managed_ledger_factory, "dd-random", 7)
    cnx = Connection()
    dispatcher.add_consumer(consumer(cnx))
    rng = random.Random(7)
    due_of: dict[ml.Position, int] = {}
    for i in range(60):
        due = now_ms() + rng.randrange(50, 400) if rng.random() < 0.6 else 0
        position = await ledger.add_entry(entry_bytes(i, due))
        due_of[position] = due
        dispatcher.wake()
    await wait_for(lambda: len(cnx.sent) >= len(due_of))
    await asyncio.sleep(0.05)  # Anything extra would have gone out by now.
    assert sorted(p for p, _ in cnx.sent) == sorted(due_of)
    for position, sent_at in cnx.sent:
        assert sent_at >= due_of[position] - TICK_MS
    assert len(dispatcher.delayed) == 0
    await dispatcher.close()


async def test_held_entries_wait_for_permits_and_survive_a_consumer_leaving(
        managed_ledger_factory):
    ledger, dispatcher = await shared_dispatcher(managed_ledger_factory, "dd-permits", 10)
    first_cnx = Connection()
    first = consumer(first_cnx, permits=1)
    dispatcher.add_consumer(first)
    late = await ledger.add_entry(entry_bytes(0, now_ms() + 200))
    plain = await ledger.add_entry(entry_bytes(1, 0))
    dispatcher.wake()
    await wait_for(lambda: len(first_cnx.sent) == 1)
    assert first_cnx.sent[0][0] == plain  # The held entry used no permit.
    assert late in dispatcher.delayed
    dispatcher.remove_consumer(first)
    # It falls due with nobody to take it: it waits for redelivery.
    await wait_for(lambda: late not in dispatcher.delayed and late in dispatcher.replay)
    second_cnx = Connection()
    dispatcher.add_consumer(consumer(second_cnx))
    await wait_for(lambda: len(second_cnx.sent) >= 2)
    assert sorted(p for p, _ in second_cnx.sent) == [late, plain]  # plain was never acked.
    await dispatcher.close()


async def test_turning_delayed_delivery_off_releases_what_is_held(managed_ledger_factory):
    ledger, dispatcher = await shared_dispatcher(managed_ledger_factory, "dd-off", 10)
    cnx = Connection()
    dispatcher.add_consumer(consumer(cnx))
    late = await ledger.add_entry(entry_bytes(0, now_ms() + 3_600_000))
    dispatcher.wake()
    await wait_for(lambda: late in dispatcher.delayed)
    assert not cnx.sent
    dispatcher.update_delayed_settings(dd.DelayedDeliverySettings(enabled=False))
    await wait_for(lambda: len(cnx.sent) == 1)
    assert cnx.sent[0][0] == late
    await dispatcher.close()


async def test_a_full_tracker_stops_reading_ahead(managed_ledger_factory):
    ledger, dispatcher = await shared_dispatcher(managed_ledger_factory, "dd-full", 1)
    dispatcher.delayed.limit = 2
    cnx = Connection()
    dispatcher.add_consumer(consumer(cnx))
    far = now_ms() + 3_600_000
    held = [await ledger.add_entry(entry_bytes(i, far)) for i in range(2)]
    plain = await ledger.add_entry(entry_bytes(2, 0))
    dispatcher.wake()
    await wait_for(lambda: len(dispatcher.delayed) == 2)
    await asyncio.sleep(0.1)
    assert not cnx.sent  # plain waits behind the full tracker.
    dispatcher.update_delayed_settings(dd.DelayedDeliverySettings(enabled=False))
    await wait_for(lambda: len(cnx.sent) == 3)
    assert sorted(p for p, _ in cnx.sent) == sorted([*held, plain])
    await dispatcher.close()
