"""Delayed delivery: entries whose deliver-at time lies ahead wait here, not at consumers.

A producer sets MessageMetadata.deliver_at_time (ms since the epoch) through
`deliver_after` / `deliver_at`. Shared and Key_Shared dispatchers hand such an
entry to a `DelayedDeliveryTracker` instead of a consumer; the tracker keeps
only its position and due time (never the bytes), and a timer per
subscription tells the dispatcher when entries fall due so it reads them back
by position and delivers them ahead of newer entries. A held entry is not
acknowledged, so it stays in the backlog and, after a restart, the dispatcher
finds it again when it reads from the mark-delete position.

The tracker holds at most `DELAYED_TRACKER_MAX` entries (plus one read batch);
when full the dispatcher stops reading ahead until due entries have gone out.
The timer rounds its wake-ups up to the tick (delayedDeliveryTickTimeMillis),
and an entry due within one tick is delivered at once unless
isDelayedDeliveryDeliverAtTimeStrict is set, as Apache's broker does.
"""

from __future__ import annotations

import asyncio
import bisect
import math
from collections.abc import Callable
from dataclasses import dataclass

from pulsar_common.clock import wall_clock_ms

from pulsar_broker.managed_ledger import api as ml

#: Entries one subscription's tracker holds before its dispatcher stops reading ahead.
DELAYED_TRACKER_MAX = 100_000


@dataclass(frozen=True, slots=True)
class DelayedDeliverySettings:
    """The broker's delayedDelivery* settings as one subscription applies them."""

    enabled: bool = True
    tick_ms: int = 1000
    #: Deliver only once deliver_at is reached, not up to one tick early.
    strict: bool = False


class DelayedDeliveryTracker:
    """Positions waiting for their deliver-at time, ordered by (time, position).

    Pure bookkeeping: time comes in as `now_ms`; the timer lives in `DelayedTimer`.
    """

    def __init__(self, settings: DelayedDeliverySettings, limit: int = DELAYED_TRACKER_MAX) -> None:
        self.settings = settings
        self.limit = limit
        self._due: dict[ml.Position, int] = {}
        self._order: list[tuple[int, ml.Position]] = []

    def __len__(self) -> int:
        return len(self._due)

    def __contains__(self, position: ml.Position) -> bool:
        return position in self._due

    @property
    def full(self) -> bool:
        return len(self._due) >= self.limit

    def cutoff_ms(self, now_ms: int) -> int:
        """Entries due at or before this time go out now."""
        return now_ms if self.settings.strict else now_ms + self.settings.tick_ms

    def should_hold(self, deliver_at_ms: int, now_ms: int) -> bool:
        return self.settings.enabled and deliver_at_ms > self.cutoff_ms(now_ms)

    def add(self, position: ml.Position, deliver_at_ms: int) -> None:
        if position in self._due:
            return
        self._due[position] = deliver_at_ms
        bisect.insort(self._order, (deliver_at_ms, position))

    def positions(self) -> list[ml.Position]:
        return list(self._due)

    def next_due_ms(self) -> int | None:
        return self._order[0][0] if self._order else None

    def take_due(self, now_ms: int) -> list[ml.Position]:
        """Remove and return the entries due now, in order of due time."""
        cutoff = self.cutoff_ms(now_ms)
        split = bisect.bisect_right(self._order, (cutoff, ml.LATEST))
        taken = [position for _, position in self._order[:split]]
        del self._order[:split]
        for position in taken:
            del self._due[position]
        return taken

    def take_all(self) -> list[ml.Position]:
        taken = [position for _, position in self._order]
        self.clear()
        return taken

    def clear(self) -> None:
        self._due.clear()
        self._order.clear()


class DelayedTimer:
    """One asyncio timer per subscription, armed for the tracker's earliest due time
    rounded up to the tick; `on_due` receives the entries that fell due."""

    def __init__(self, tracker: DelayedDeliveryTracker,
                 on_due: Callable[[list[ml.Position]], None],
                 clock_ms: Callable[[], int] = wall_clock_ms) -> None:
        self.tracker = tracker
        self._on_due = on_due
        self._clock_ms = clock_ms
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for: int | None = None

    def arm(self) -> None:
        due = self.tracker.next_due_ms()
        if due is None:
            self.cancel()
            return
        tick = max(1, self.tracker.settings.tick_ms)
        fire_at = math.ceil(due / tick) * tick
        if self.tracker.settings.strict:
            fire_at = max(fire_at, due)
        if self._handle is not None and self._armed_for is not None and self._armed_for <= fire_at:
            return
        self.cancel()
        delay_s = max(0.0, (fire_at - self._clock_ms()) / 1000)
        self._armed_for = fire_at
        self._handle = asyncio.get_running_loop().call_later(delay_s, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed_for = None
        due = self.tracker.take_due(self._clock_ms())
        if due:
            self._on_due(due)
        self.arm()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._armed_for = None
