"""Dispatchers: the read loop that moves entries from a cursor to consumers.

One asyncio task per subscription reads from the cursor only while some
consumer has permits, so a slow consumer stops reads instead of filling broker
memory. The subscription type decides who gets each entry:

* Exclusive / Failover: the single active consumer; a redelivery request
  rewinds the cursor to the first unacknowledged entry.
* Shared: round-robin over consumers with permits; unacknowledged entries of
  a closed consumer and negatively acknowledged ones are replayed first.
* Key_Shared: by hash range of the entry's sticky key; an entry whose
  consumer has no permits waits (with every later entry for that consumer,
  so each key stays in order).

A consumer whose connection's outbound buffer is above its high-water mark
counts as having no permits, so a client that grants permits but does not
read cannot make the broker buffer the backlog; its connection wakes the
dispatcher once the buffer drains.

Shared and Key_Shared hold entries whose deliver-at time lies ahead in a
delayed-delivery tracker (delayed_delivery.py); when they fall due they join
the replay set and go out ahead of newer entries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from pulsar_common.wire import errors as wire_errors

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import delayed_delivery, selection
from pulsar_broker.subscriptions.consumer import Consumer, Dispatched, SubType
from pulsar_broker.topics import entry_info

log = logging.getLogger(__name__)

#: Entries waiting for redelivery above which no new entries are read (Key_Shared).
REPLAY_BACKLOG_MAX = 10_000
#: Apache's default dispatcherMaxReadSizeBytes.
MAX_READ_BYTES = 5 * 1024 * 1024

#: Every dispatcher's read-loop task until it ends (the event loop keeps only weak ones).
_RUNNING: set[asyncio.Task[None]] = set()


class Dispatcher:
    def __init__(
        self,
        cursor: ml.ManagedCursor,
        sub_type: SubType,
        partition_index: int,
        max_read_batch: int,
        redelivery_count: Callable[[ml.Position], int],
        on_active_change: Callable[[Consumer | None], None] | None = None,
        delayed_settings: delayed_delivery.DelayedDeliverySettings | None = None,
        clock_ms: Callable[[], int] = delayed_delivery.wall_clock_ms,
        max_read_bytes: int = MAX_READ_BYTES,
    ) -> None:
        self.cursor = cursor
        self.sub_type = sub_type
        self.partition_index = partition_index
        self.max_read_batch = max_read_batch
        #: dispatcherMaxReadSizeBytes: one read stops once it holds this many bytes.
        self.max_read_bytes = max_read_bytes
        self._redelivery_count = redelivery_count
        self._on_active_change = on_active_change
        self.consumers: list[Consumer] = []
        self.replay: set[ml.Position] = set()
        self._ranges: selection.AutoSplitRanges[Consumer] = selection.AutoSplitRanges.empty()
        self._round_robin = 0
        self._active: Consumer | None = None
        self._generation = 0
        self._wake = asyncio.Event()
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._clock_ms = clock_ms
        #: Entries acknowledged without delivery because no client could read them.
        self.unreadable_entries_skipped = 0
        self.delayed = delayed_delivery.DelayedDeliveryTracker(
            delayed_settings or delayed_delivery.DelayedDeliverySettings())
        self._delayed_timer = delayed_delivery.DelayedTimer(
            self.delayed, self._delayed_due, clock_ms)

    # Consumers

    @property
    def single_active(self) -> bool:
        return self.sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER)

    @property
    def active_consumer(self) -> Consumer | None:
        return self._active

    def add_consumer(self, consumer: Consumer) -> None:
        self.consumers.append(consumer)
        if self.sub_type is SubType.KEY_SHARED:
            self._ranges.add(consumer)
        self._update_active()
        self._start()
        self.wake()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        consumer.closed = True
        if self.sub_type is SubType.KEY_SHARED:
            self._ranges.remove(consumer)
        pending = consumer.take_pending()
        if self.single_active:
            self._update_active(force_rewind=bool(pending))
        else:
            self.replay.update(pending)
        self.wake()

    def _update_active(self, force_rewind: bool = False) -> None:
        if not self.single_active:
            return
        new = selection.failover_active(self.consumers, self.partition_index)
        if new is not self._active:
            self._active = new
            self._rewind()
            if self._on_active_change is not None:
                self._on_active_change(new)
        elif force_rewind:
            self._rewind()

    # Redelivery

    def redeliver(self, consumer: Consumer, positions: Iterable[ml.Position] | None) -> None:
        """A consumer asked for redelivery: of these entries, or of all it holds."""
        if self.single_active:
            consumer.take_pending()
            self._rewind()
        else:
            wanted = consumer.take_pending() if positions is None else [
                p for p in positions if consumer.acknowledged(p)
            ]
            self.replay.update(p for p in wanted if not self.cursor.is_acknowledged(p))
        self.wake()

    def _rewind(self) -> None:
        self._generation += 1
        for consumer in self.consumers:
            consumer.take_pending()
        self.cursor.rewind()
        self.wake()

    def reset(self) -> None:
        """The cursor was moved (seek / reset): forget what was in flight."""
        self._generation += 1
        self.replay.clear()
        self.delayed.clear()
        self._delayed_timer.cancel()
        for consumer in self.consumers:
            consumer.take_pending()

    # The read loop

    def wake(self) -> None:
        self._wake.set()

    def _start(self) -> None:
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._run())
            # Held until it ends: a dispatcher dropped without close() (retired, or lost
            # to a bug) must not leave a pending task for the garbage collector to destroy.
            _RUNNING.add(self._task)
            self._task.add_done_callback(_RUNNING.discard)

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

    @property
    def holds_delayed(self) -> bool:
        """Whether this dispatcher keeps delayed entries back (Shared and Key_Shared)."""
        return not self.single_active and self.delayed.settings.enabled

    def delayed_count(self) -> int:
        """Entries held for their deliver-at time and not acknowledged meanwhile."""
        return sum(1 for p in self.delayed.positions() if not self.cursor.is_acknowledged(p))

    def retire(self) -> None:
        """Replaced by another dispatcher (the subscription changed type): stop, without
        waiting. The cursor is rewound, so held entries are read again by the new one."""
        self._closed = True
        self._delayed_timer.cancel()
        self.wake()

    async def close(self) -> None:
        self._closed = True
        self._delayed_timer.cancel()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    def _permits(self) -> int:
        if self.single_active:
            return self._active.permits if self._active and self._active.available else 0
        return max((c.permits for c in self.consumers if c.available), default=0)

    async def _run(self) -> None:
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._dispatch_while_possible()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("dispatch failed on cursor %s; retrying", self.cursor.name)
                await asyncio.sleep(0.5)
                self.wake()

    async def _dispatch_while_possible(self) -> None:
        while not self._closed:
            permits = self._permits()
            if permits <= 0:
                return
            batch = max(1, min(permits, self.max_read_batch))
            generation = self._generation
            blocked: set[int] = set()
            if self.replay:
                progressed, blocked = await self._dispatch_replay(batch, generation)
                if progressed:
                    continue
            if (len(self.replay) >= REPLAY_BACKLOG_MAX or self.delayed.full
                    or not self.cursor.has_more_entries()):
                return
            entries = await self.cursor.read_entries(batch, self.max_read_bytes)
            if generation != self._generation or not entries:
                continue
            items = await self._readable(entries)
            if generation != self._generation:
                continue
            self._dispatch(items, blocked)

    async def _dispatch_replay(self, batch: int, generation: int) -> tuple[bool, set[int]]:
        """Send entries waiting for redelivery; returns (progress made, consumers still
        holding back entries). Key_Shared looks at all of them so that no newer entry of
        a key overtakes an older one that waits."""
        ordered = sorted(self.replay)
        positions = ordered if self.sub_type is SubType.KEY_SHARED else ordered[:batch]
        self.replay.difference_update(positions)
        wanted = [p for p in positions if not self.cursor.is_acknowledged(p)]
        entries = await self.cursor.replay_entries(wanted) if wanted else []
        items = await self._readable(entries)
        if generation != self._generation:
            return True, set()
        waiting_before = len(self.replay)
        blocked = self._dispatch(items, set())
        sent = len(items) - (len(self.replay) - waiting_before)
        return sent > 0 or len(items) < len(positions), blocked

    async def _readable(self, entries: list[ml.Entry]) -> list[Dispatched]:
        """The entries described for dispatch. One no client could read (stored before
        the broker checked SENDs: bad metadata, an impossible batch) is acknowledged and
        skipped, so it neither stalls the subscription nor reaches a consumer."""
        items: list[Dispatched] = []
        unreadable: list[ml.Position] = []
        for entry in entries:
            try:
                items.append(self._describe(entry))
            except wire_errors.WireError as exc:
                unreadable.append(entry.position)
                log.warning("skipping unreadable entry %s on cursor %s: %s", entry.position,
                            self.cursor.name, exc)
        if unreadable:
            self.unreadable_entries_skipped += len(unreadable)
            await self.cursor.delete(unreadable)
        return items

    @staticmethod
    def _describe(entry: ml.Entry) -> Dispatched:
        info = entry_info.entry_info(entry.data)
        return Dispatched(entry, info.num_messages, info.sticky_key, info.deliver_at_time_ms)

    def _hold_if_delayed(self, item: Dispatched, now_ms: int) -> bool:
        """Keep an entry whose time has not come in the tracker; True when held."""
        if not item.deliver_at_ms or not self.delayed.should_hold(item.deliver_at_ms, now_ms):
            return False
        self.delayed.add(item.entry.position, item.deliver_at_ms)
        self._delayed_timer.arm()
        return True

    def _dispatch(self, items: list[Dispatched], blocked: set[int]) -> set[int]:
        """Hand items out; what cannot go now waits in replay. Returns blocked consumers."""
        if self.single_active:
            active = self._active
            for item in items:
                if active is None or active.closed:
                    # Read again once a consumer is back.
                    self.cursor.rewind()
                    break
                if not active.cnx.writable:
                    # Its connection's buffer is full: read this entry again once it drains.
                    self.cursor.seek(item.entry.position)
                    break
                active.send(item, self._redelivery_count(item.entry.position))
            return blocked
        now_ms = self._clock_ms()
        for item in items:
            if self.holds_delayed and self._hold_if_delayed(item, now_ms):
                continue
            consumer = self._pick(item, blocked)
            if consumer is None:
                self.replay.add(item.entry.position)
                continue
            consumer.send(item, self._redelivery_count(item.entry.position))
        return blocked

    def _pick(self, item: Dispatched, blocked: set[int]) -> Consumer | None:
        if self.sub_type is SubType.KEY_SHARED:
            owner = self._ranges.owner(selection.sticky_key_hash(item.sticky_key))
            if owner is None or id(owner) in blocked or not owner.available:
                if owner is not None:
                    blocked.add(id(owner))
                return None
            return owner
        count = len(self.consumers)
        for step in range(count):
            consumer = self.consumers[(self._round_robin + step) % count]
            if consumer.available:
                self._round_robin = (self._round_robin + step + 1) % count
                return consumer
        return None
