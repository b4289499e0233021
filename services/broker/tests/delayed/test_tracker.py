"""The delayed-delivery tracker and its timer, driven with an injected clock."""

from __future__ import annotations

import asyncio

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import delayed_delivery as dd


def pos(entry: int) -> ml.Position:
    return ml.Position(1, entry)


def test_an_entry_due_within_one_tick_goes_out_at_once():
    tracker = dd.DelayedDeliveryTracker(dd.DelayedDeliverySettings(tick_ms=1000))
    assert not tracker.should_hold(10_900, now_ms=10_000)
    assert tracker.should_hold(11_001, now_ms=10_000)


def test_strict_holds_until_the_time_itself():
    tracker = dd.DelayedDeliveryTracker(dd.DelayedDeliverySettings(tick_ms=1000, strict=True))
    assert tracker.should_hold(10_001, now_ms=10_000)
    assert not tracker.should_hold(10_000, now_ms=10_000)


def test_disabled_holds_nothing():
    tracker = dd.DelayedDeliveryTracker(dd.DelayedDeliverySettings(enabled=False))
    assert not tracker.should_hold(10**15, now_ms=0)


def test_due_entries_come_out_in_time_order_once():
    tracker = dd.DelayedDeliveryTracker(dd.DelayedDeliverySettings(tick_ms=100))
    tracker.add(pos(1), 5_000)
    tracker.add(pos(2), 3_000)
    tracker.add(pos(3), 3_000)
    tracker.add(pos(2), 3_000)  # Read twice (a rewind): tracked once.
    tracker.add(pos(4), 9_000)
    assert len(tracker) == 4
    assert tracker.next_due_ms() == 3_000
    assert tracker.take_due(now_ms=2_800) == []
    assert tracker.take_due(now_ms=4_950) == [pos(2), pos(3), pos(1)]
    assert tracker.take_due(now_ms=4_950) == []
    assert pos(4) in tracker and len(tracker) == 1


def test_full_at_the_limit():
    tracker = dd.DelayedDeliveryTracker(dd.DelayedDeliverySettings(), limit=2)
    tracker.add(pos(1), 5_000)
    assert not tracker.full
    tracker.add(pos(2), 6_000)
    assert tracker.full
    tracker.take_due(now_ms=4_500)
    assert not tracker.full


async def test_the_timer_hands_over_due_entries_and_rearms():
    now = [1_000]
    released: list[list[ml.Position]] = []
    got = asyncio.Event()

    def on_due(positions: list[ml.Position]) -> None:
        released.append(positions)
        got.set()

    tracker = dd.DelayedDeliveryTracker(dd.DelayedDeliverySettings(tick_ms=10))
    timer = dd.DelayedTimer(tracker, on_due, clock_ms=lambda: now[0])
    tracker.add(pos(1), 1_000_000)
    timer.arm()
    tracker.add(pos(2), 1_020)
    timer.arm()  # Re-armed for the earlier entry.
    now[0] = 1_020
    await asyncio.wait_for(got.wait(), 10)
    assert released == [[pos(2)]]
    assert list(tracker.positions()) == [pos(1)]
    timer.cancel()
