"""Key_Shared: each entry goes to the consumer owning the hash range of its sticky key.

Consumers split the hash space as they join (AUTO_SPLIT, `selection.AutoSplitRanges`), or,
with subscriptionKeySharedUseConsistentHashing, own the keys next to their points on a ring
(`consistent_hashing.ConsistentHashingRing`).
An entry whose consumer has no permits waits for redelivery, and so does every
later entry for that consumer in the same round, so each key stays in order;
every waiting entry is looked at before new ones are read for the same reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pulsar_common import clock

from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions import (
    consistent_hashing,
    delayed_delivery,
    dispatcher,
    replaying,
    selection,
)
from pulsar_broker.subscriptions.consumer import Consumer, Dispatched


class StickyKeySelector(Protocol):
    """Who gets a sticky key's hash: AUTO_SPLIT ranges or the consistent-hashing ring."""

    def add(self, consumer: Consumer) -> None: ...

    def remove(self, consumer: Consumer) -> None: ...

    def owner(self, key_hash: int) -> Consumer | None: ...


class KeySharedDispatcher(replaying.ReplayingDispatcher):
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
        replica_points: int = 0,
    ) -> None:
        super().__init__(
            cursor, partition_index=partition_index, max_read_batch=max_read_batch,
            redelivery_count=redelivery_count, max_read_bytes=max_read_bytes,
            delayed_settings=delayed_settings, clock_ms=clock_ms)
        #: Who owns which part of the sticky-key hash space, and the hash it is keyed by.
        self.ranges: StickyKeySelector
        self._key_hash: Callable[[bytes], int]
        if replica_points > 0:
            self.ranges = consistent_hashing.ConsistentHashingRing(
                lambda consumer: consumer.consumer_name, replica_points)
            self._key_hash = selection.murmur3_32
        else:
            self.ranges = selection.AutoSplitRanges.empty()
            self._key_hash = selection.sticky_key_hash

    def add_consumer(self, consumer: Consumer) -> None:
        self.ranges.add(consumer)
        super().add_consumer(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        if consumer in self.consumers:
            self.ranges.remove(consumer)
        super().remove_consumer(consumer)

    def _replay_batch(self, ordered: list[ml.Position], batch: int) -> list[ml.Position]:
        # All of them: no newer entry of a key may overtake an older one that waits.
        return ordered

    def _pick(self, item: Dispatched, blocked: set[int]) -> Consumer | None:
        owner = self.ranges.owner(self._key_hash(item.sticky_key))
        if owner is None or id(owner) in blocked or not owner.available:
            if owner is not None:
                blocked.add(id(owner))
            return None
        return owner
