"""The read loop every dispatcher shares: entries from a cursor to consumers, within permits.

One asyncio task per subscription reads from the cursor only while some
consumer has permits, so a slow consumer stops reads instead of filling broker
memory. A consumer whose connection's outbound buffer is above its high-water
mark counts as having no permits, so a client that grants permits but does
not read cannot make the broker buffer the backlog; its connection wakes the
dispatcher once the buffer drains. Entries no client could read are
acknowledged and skipped here, for every delivery model.

Who gets each entry is the delivery model's business, one class per model:
single_active.py (Exclusive, Failover), shared.py (Shared) and key_shared.py
(Key_Shared), the last two over replaying.py; `subscription.new_dispatcher`
picks one for a subscription type.
"""

from __future__ import annotations

import abc
import asyncio
import logging
import random
import time
from collections.abc import Callable, Iterable

from pulsar_common.wire import entry_info
from pulsar_common.wire import errors as wire_errors

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import delayed_delivery, dispatch_rate, unacked_limit
from pulsar_broker.subscriptions.consumer import Consumer, Dispatched

log = logging.getLogger(__name__)

#: Apache's default dispatcherMaxReadSizeBytes.
MAX_READ_BYTES = 5 * 1024 * 1024
#: Pause before the read loop tries again after an unexpected failure.
RETRY_AFTER_FAILURE_S = 0.5

#: Where throttled dispatchers draw the spread of their retries (see _resume_after).
THROTTLE_JITTER = random.Random()

#: Every dispatcher's read-loop task until it ends (the event loop keeps only weak ones).
_RUNNING: set[asyncio.Task[None]] = set()

#: How many times an entry was handed out before (Shared/Key_Shared's redelivery count).
RedeliveryCount = Callable[[ml.Position], int]


class Dispatcher(abc.ABC):
    """The read loop; a subclass decides who gets what (`_permits`, `_dispatch`)."""

    def __init__(
        self,
        cursor: ml.ManagedCursor,
        *,
        partition_index: int,
        max_read_batch: int,
        redelivery_count: RedeliveryCount,
        max_read_bytes: int = MAX_READ_BYTES,
    ) -> None:
        self.cursor = cursor
        self.partition_index = partition_index
        self.max_read_batch = max_read_batch
        #: dispatcherMaxReadSizeBytes: one read stops once it holds this many bytes.
        self.max_read_bytes = max_read_bytes
        self._redelivery_count = redelivery_count
        self.consumers: list[Consumer] = []
        #: Bumped whenever what was read may no longer go out (rewind, seek, reset).
        self._generation = 0
        #: Woken since the read loop last looked; the loop waits on `_wake_waiter` otherwise
        #: (a future rather than an asyncio.Event: an Event's deque costs ~760 bytes per
        #: subscription, issue 16).
        self._woken = False
        self._wake_waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        #: Entries acknowledged without delivery because no client could read them.
        self.unreadable_entries_skipped = 0
        #: Entries and bytes this dispatcher read from its cursor (the storage read rate).
        self.entries_read = 0
        self.bytes_read = 0
        #: The topic's and the subscription's dispatch rates (None: never limited); set by
        #: whoever creates the dispatcher for a subscription.
        self.throttle: dispatch_rate.DispatchThrottle | None = None
        #: maxUnackedMessagesPerSubscription, held by the models with several consumers.
        self.unacked_limit = unacked_limit.UnackedLimit()
        self._throttle_timer: asyncio.TimerHandle | None = None

    # -- consumers and redelivery, per delivery model ---------------------------------

    @abc.abstractmethod
    def add_consumer(self, consumer: Consumer) -> None: ...

    @abc.abstractmethod
    def remove_consumer(self, consumer: Consumer) -> None: ...

    @abc.abstractmethod
    def redeliver(self, consumer: Consumer, positions: Iterable[ml.Position] | None) -> None:
        """A consumer asked for redelivery: of these entries, or of all it holds."""

    @property
    def active_consumer(self) -> Consumer | None:
        """The consumer that gets every entry, for the single-active models."""
        return None

    def forget(self, position: ml.Position) -> None:
        """The position was acknowledged: drop it from whatever waits to go out again."""

    def update_delayed_settings(self, settings: delayed_delivery.DelayedDeliverySettings) -> None:
        """New delayed-delivery settings; only the models that hold delayed entries care."""

    def delayed_count(self) -> int:
        """Entries held for their deliver-at time and not acknowledged meanwhile."""
        return 0

    def reset(self) -> None:
        """The cursor was moved (seek / reset): forget what was in flight."""
        self._generation += 1
        for consumer in self.consumers:
            consumer.take_pending()

    # -- the read loop ---------------------------------------------------------------------

    def wake(self) -> None:
        self._woken = True
        waiter = self._wake_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _start(self) -> None:
        if self._task is None and not self._closed:
            self._task = asyncio.get_running_loop().create_task(self._run())
            # Held until it ends: a dispatcher dropped without close() (retired, or lost
            # to a bug) must not leave a pending task for the garbage collector to destroy.
            _RUNNING.add(self._task)
            self._task.add_done_callback(_RUNNING.discard)

    def retire(self) -> None:
        """Replaced by another dispatcher (the subscription changed type): stop, without
        waiting. The cursor is rewound, so held entries are read again by the new one."""
        self._closed = True
        self._cancel_throttle_timer()
        self.wake()

    async def close(self) -> None:
        self._closed = True
        self._cancel_throttle_timer()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self) -> None:
        while not self._closed:
            if not self._woken:
                self._wake_waiter = asyncio.get_running_loop().create_future()
                try:
                    await self._wake_waiter
                finally:
                    self._wake_waiter = None
            self._woken = False
            try:
                await self._dispatch_while_possible()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("dispatch failed on cursor %s; retrying", self.cursor.name)
                await asyncio.sleep(RETRY_AFTER_FAILURE_S)
                self.wake()

    async def _dispatch_while_possible(self) -> None:
        while not self._closed:
            permits = self._permits()
            if permits <= 0:
                return
            batch = max(1, min(permits, self.max_read_batch))
            max_bytes = self.max_read_bytes
            if self.throttle is not None:
                now_s = time.monotonic()
                quota = self.throttle.quota(now_s)
                if quota is not None:
                    if quota.throttled:
                        self._resume_after(self.throttle.wait_s(now_s)
                                           + THROTTLE_JITTER.random() * dispatch_rate.RETRY_MIN_S)
                        return
                    batch, max_bytes = quota.fit(batch, max_bytes)
            generation = self._generation
            if await self._dispatch_held(batch, generation):
                continue
            if not self._may_read_ahead() or not self.cursor.has_more_entries():
                return
            entries = await self._read(batch, max_bytes)
            if generation != self._generation or not entries:
                continue
            items = await self._readable(entries)
            if generation != self._generation:
                continue
            self._dispatch(items)

    async def _read(self, batch: int, max_bytes: int) -> list[ml.Entry]:
        """The next entries of the cursor for this subscription (at most batch)."""
        return self._counted(await self.cursor.read_entries(batch, max_bytes))

    def _counted(self, entries: list[ml.Entry]) -> list[ml.Entry]:
        """entries, counted as read from the managed ledger (the metrics' read rates)."""
        self.entries_read += len(entries)
        self.bytes_read += sum(len(entry.data) for entry in entries)
        return entries

    def _resume_after(self, delay_s: float) -> None:
        """Over its dispatch rate: look again once the rate allows more. Dispatchers sharing
        a limiter (the broker's, a topic's) wait for the same token; their delays are spread
        by up to RETRY_MIN_S, else the one whose timer was set first would take every refill
        and starve the others."""
        if self._throttle_timer is None:
            self._throttle_timer = asyncio.get_running_loop().call_later(
                delay_s, self._throttle_elapsed)

    def _throttle_elapsed(self) -> None:
        self._throttle_timer = None
        self.wake()

    def _cancel_throttle_timer(self) -> None:
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
            self._throttle_timer = None

    @abc.abstractmethod
    def _permits(self) -> int:
        """How many messages may go out now (0 stops reading)."""

    async def _dispatch_held(self, batch: int, generation: int) -> bool:
        """Send entries held back for redelivery before reading new ones; True when that
        made progress (the loop then looks again before reading)."""
        return False

    def _may_read_ahead(self) -> bool:
        """False while held entries are too many to read newer ones."""
        return True

    @abc.abstractmethod
    def _dispatch(self, items: list[Dispatched]) -> None:
        """Hand entries read from the cursor to consumers."""

    async def _readable(self, entries: list[ml.Entry]) -> list[Dispatched]:
        """The entries described for dispatch. One no client could read (stored before
        the broker checked SENDs: bad metadata, an impossible batch) is acknowledged and
        skipped, so it neither stalls the subscription nor reaches a consumer."""
        items: list[Dispatched] = []
        unreadable: list[ml.Position] = []
        for entry in entries:
            try:
                items.append(_describe(entry))
            except wire_errors.WireError as exc:
                unreadable.append(entry.position)
                log.warning("skipping unreadable entry %s on cursor %s: %s", entry.position,
                            self.cursor.name, exc)
        if unreadable:
            self.unreadable_entries_skipped += len(unreadable)
            await self.cursor.delete(unreadable)
        return items

    def _send(self, consumer: Consumer, item: Dispatched) -> None:
        position = item.entry.position
        # A partly acknowledged batch goes out with the messages still to deliver.
        ack_set = self.cursor.batch_ack_set(position) if item.num_messages > 1 else None
        sent = consumer.send(item, self._redelivery_count(position), ack_set)
        if self.throttle is not None and self.throttle.active:
            self.throttle.record(sent, len(item.entry.data), time.monotonic())


def _describe(entry: ml.Entry) -> Dispatched:
    info = entry_info.entry_info(entry.data)
    return Dispatched(entry, info.num_messages, info.sticky_key, info.deliver_at_time_ms)
