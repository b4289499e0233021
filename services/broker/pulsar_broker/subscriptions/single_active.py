"""Exclusive and Failover: every entry goes to the one active consumer.

Exclusive has one consumer; Failover picks the active one among several
(`selection.failover_active`: priority level, then name; partitions of a
partitioned topic spread over the top-priority consumers) and tells each
consumer whether it is active. A redelivery request, a change of active
consumer or an active consumer leaving with unacknowledged entries rewinds
the cursor to the first unacknowledged entry, so order is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import dispatcher, selection
from pulsar_broker.subscriptions.consumer import Consumer, Dispatched


class SingleActiveDispatcher(dispatcher.Dispatcher):
    def __init__(
        self,
        cursor: ml.ManagedCursor,
        *,
        partition_index: int,
        max_read_batch: int,
        redelivery_count: dispatcher.RedeliveryCount,
        max_read_bytes: int = dispatcher.MAX_READ_BYTES,
        on_active_change: Callable[[Consumer | None], None] | None = None,
    ) -> None:
        super().__init__(cursor, partition_index=partition_index, max_read_batch=max_read_batch,
                         redelivery_count=redelivery_count, max_read_bytes=max_read_bytes)
        self._on_active_change = on_active_change
        self._active: Consumer | None = None

    @property
    def active_consumer(self) -> Consumer | None:
        return self._active

    def add_consumer(self, consumer: Consumer) -> None:
        self.consumers.append(consumer)
        self._update_active()
        self._start()
        self.wake()

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer not in self.consumers:
            return
        self.consumers.remove(consumer)
        consumer.closed = True
        pending = consumer.take_pending()
        self._update_active(force_rewind=bool(pending))
        self.wake()

    def _update_active(self, force_rewind: bool = False) -> None:
        new = selection.failover_active(self.consumers, self.partition_index)
        if new is not self._active:
            self._active = new
            self._rewind()
            if self._on_active_change is not None:
                self._on_active_change(new)
        elif force_rewind:
            self._rewind()

    def redeliver(self, consumer: Consumer, positions: Iterable[ml.Position] | None) -> None:
        consumer.take_pending()
        self._rewind()
        self.wake()

    def _rewind(self) -> None:
        self._generation += 1
        for consumer in self.consumers:
            consumer.take_pending()
        self.cursor.rewind()
        self.wake()

    def _permits(self) -> int:
        return self._active.permits if self._active and self._active.available else 0

    def _dispatch(self, items: list[Dispatched]) -> None:
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
            self._send(active, item)
