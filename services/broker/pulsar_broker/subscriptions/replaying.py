"""What Shared and Key_Shared have in common: entries that wait to go out again.

Entries of a consumer that left, negatively acknowledged ones and ones no
consumer could take yet wait in a replay set and go out before newer
entries. Entries whose deliver-at time lies ahead wait in a delayed-delivery
tracker (delayed_delivery.py); when they fall due they join the replay set.
Which consumer gets an entry is the subclass's choice (`_pick`).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable

from pulsar_common import clock

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import delayed_delivery, dispatcher
from pulsar_broker.subscriptions.consumer import Consumer, Dispatched

#: Entries waiting for redelivery above which no new entries are read.
REPLAY_BACKLOG_MAX = 10_000


class ReplayingDispatcher(dispatcher.Dispatcher):
    def __init__(
        self,
        cursor: ml.ManagedCursor,
        *,
        partition_index: int,
        max_read_batch: int,
        redelivery_count: dispatcher.RedeliveryCount,
        max_read_bytes: int = dispatcher.MAX_READ_BYTES,
        delayed_settings: delayed_delivery.DelayedDeliverySettings | None = None,
        clock_ms: Callable[[], int] = clock.wall_clock_ms,
    ) -> None:
        super().__init__(cursor, partition_index=partition_index, max_read_batch=max_read_batch,
                         redelivery_count=redelivery_count, max_read_bytes=max_read_bytes)
        self.replay: set[ml.Position] = set()
        self._clock_ms = clock_ms
        self.delayed = delayed_delivery.DelayedDeliveryTracker(
            delayed_settings or delayed_delivery.DelayedDeliverySettings())
        self._delayed_timer = delayed_delivery.DelayedTimer(
            self.delayed, self._delayed_due, clock_ms)
        #: Consumers (by id) that hold entries back in this round: nothing newer goes to them.
        self._blocked: set[int] = set()

    # -- consumers and redelivery -------------------------------------------------------

    def add_consumer(self, consumer: Consumer) -> None:
        self.consumers.append(consumer)
        self._start()
        self.wake()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        consumer.closed = True
        self.replay.update(consumer.take_pending())
        self.wake()

    def redeliver(self, consumer: Consumer, positions: Iterable[ml.Position] | None) -> None:
        wanted = consumer.take_pending() if positions is None else [
            p for p in positions if consumer.acknowledged(p)
        ]
        self.replay.update(p for p in wanted if not self.cursor.is_acknowledged(p))
        self.wake()

    def forget(self, position: ml.Position) -> None:
        self.replay.discard(position)

    def reset(self) -> None:
        super().reset()
        self.replay.clear()
        self.delayed.clear()
        self._delayed_timer.cancel()

    # -- delayed delivery ---------------------------------------------------------------

    def _delayed_due(self, positions: list[ml.Position]) -> None:
        self.replay.update(positions)
        self.wake()

    def update_delayed_settings(self, settings: delayed_delivery.DelayedDeliverySettings) -> None:
        """New settings (e.g. a namespace policy changed): when delayed delivery is now off,
        everything held goes out at once; otherwise the timer follows the new tick."""
        self.delayed.settings = settings
        self._delayed_timer.cancel()
        if settings.enabled:
            self._delayed_timer.arm()
        elif len(self.delayed):
            self._delayed_due(self.delayed.take_all())

    def delayed_count(self) -> int:
        return sum(1 for p in self.delayed.positions() if not self.cursor.is_acknowledged(p))

    def _hold_if_delayed(self, item: Dispatched, now_ms: int) -> bool:
        """Keep an entry whose time has not come in the tracker; True when held."""
        if not item.deliver_at_ms or not self.delayed.should_hold(item.deliver_at_ms, now_ms):
            return False
        self.delayed.add(item.entry.position, item.deliver_at_ms)
        self._delayed_timer.arm()
        return True

    def retire(self) -> None:
        self._delayed_timer.cancel()
        super().retire()

    async def close(self) -> None:
        self._delayed_timer.cancel()
        await super().close()

    # -- the read loop's choices ----------------------------------------------------------

    def _permits(self) -> int:
        permits = max((c.permits for c in self.consumers if c.available), default=0)
        room = self.unacked_limit.room(self.unacked_messages())
        return permits if room is None else min(permits, room)

    def unacked_messages(self) -> int:
        """Messages delivered to the consumers and not yet acknowledged, over all of them."""
        return sum(c.unacked_messages for c in self.consumers)

    def _may_read_ahead(self) -> bool:
        return len(self.replay) < REPLAY_BACKLOG_MAX and not self.delayed.full

    def _replay_batch(self, ordered: list[ml.Position], batch: int) -> list[ml.Position]:
        """Which of the waiting entries (in log order) to send again in one round."""
        return ordered[:batch]

    async def _dispatch_held(self, batch: int, generation: int) -> bool:
        """Send entries waiting for redelivery; True when that made progress."""
        self._blocked = set()
        if not self.replay:
            return False
        positions = self._replay_batch(sorted(self.replay), batch)
        self.replay.difference_update(positions)
        wanted = [p for p in positions if not self.cursor.is_acknowledged(p)]
        entries = self._counted(await self.cursor.replay_entries(wanted)) if wanted else []
        items = await self._readable(entries)
        if generation != self._generation:
            return True
        waiting_before = len(self.replay)
        self._dispatch(items)
        blocked = self._blocked
        sent = len(items) - (len(self.replay) - waiting_before)
        progressed = sent > 0 or len(items) < len(positions)
        # What stays blocked holds back newer entries read in this round too.
        self._blocked = set() if progressed else blocked
        return progressed

    def _dispatch(self, items: list[Dispatched]) -> None:
        """Hand items out; what cannot go now waits in replay."""
        now_ms = self._clock_ms()
        holds_delayed = self.delayed.settings.enabled
        for item in items:
            if holds_delayed and self._hold_if_delayed(item, now_ms):
                continue
            consumer = self._pick(item, self._blocked)
            if consumer is None:
                self.replay.add(item.entry.position)
                continue
            self._send(consumer, item)

    @abc.abstractmethod
    def _pick(self, item: Dispatched, blocked: set[int]) -> Consumer | None:
        """The consumer for this entry now, or None when it must wait (in replay)."""
