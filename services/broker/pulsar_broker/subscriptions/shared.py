"""Shared: entries go round-robin to the consumers that have permits.

A consumer that leaves, or negatively acknowledges, hands its entries back
for redelivery to any consumer (replaying.py); order across consumers is not
kept, as in Apache Pulsar.
"""

from __future__ import annotations

from pulsar_broker.subscriptions import replaying
from pulsar_broker.subscriptions.consumer import Consumer, Dispatched


class SharedDispatcher(replaying.ReplayingDispatcher):
    #: Where the next round-robin search starts (an index into consumers).
    _round_robin = 0

    def _pick(self, item: Dispatched, blocked: set[int]) -> Consumer | None:
        count = len(self.consumers)
        for step in range(count):
            consumer = self.consumers[(self._round_robin + step) % count]
            if consumer.available:
                self._round_robin = (self._round_robin + step + 1) % count
                return consumer
        return None
