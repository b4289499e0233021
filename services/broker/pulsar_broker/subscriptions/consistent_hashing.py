"""Key_Shared with consistent hashing (`subscriptionKeySharedUseConsistentHashing=true`).

Each consumer places `replica_points` points on a ring of 32-bit hashes (the
MurmurHash3 of its name followed by the point's number, as Apache's
ConsistentHashingStickyKeyConsumerSelector does); a key belongs to the
consumer of the first point at or after the key's hash, wrapping around. A
joining or leaving consumer moves only the keys next to its own points, where
AUTO_SPLIT halves or merges a whole range. Points two consumers share go to
the one whose name sorts first, so every broker picks the same owner.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Generic, TypeVar

from pulsar_broker.subscriptions import selection

C = TypeVar("C")

#: Apache's subscriptionKeySharedConsistentHashingReplicaPoints default.
DEFAULT_REPLICA_POINTS = 100


def point_hash(consumer_name: str, index: int) -> int:
    return selection.murmur3_32(f"{consumer_name}{index}".encode())


class ConsistentHashingRing(Generic[C]):
    """The ring; consumers are told apart by identity, named by `name_of`."""

    def __init__(self, name_of: Callable[[C], str],
                 replica_points: int = DEFAULT_REPLICA_POINTS) -> None:
        if replica_points < 1:
            raise ValueError("replica_points must be at least 1")
        self._name_of = name_of
        self._replica_points = replica_points
        self._hashes: list[int] = []
        #: Per point, the consumers placed on it (first: the owner).
        self._holders: list[list[C]] = []

    def add(self, consumer: C) -> None:
        name = self._name_of(consumer)
        for index in range(self._replica_points):
            value = point_hash(name, index)
            at = bisect.bisect_left(self._hashes, value)
            if at < len(self._hashes) and self._hashes[at] == value:
                holders = self._holders[at]
                holders.append(consumer)
                holders.sort(key=self._name_of)
            else:
                self._hashes.insert(at, value)
                self._holders.insert(at, [consumer])

    def remove(self, consumer: C) -> None:
        for at in range(len(self._hashes) - 1, -1, -1):
            holders = self._holders[at]
            if any(holder is consumer for holder in holders):
                holders[:] = [holder for holder in holders if holder is not consumer]
                if not holders:
                    del self._hashes[at]
                    del self._holders[at]

    def owner(self, key_hash: int) -> C | None:
        """The consumer for a key whose MurmurHash3 is key_hash (full 32 bits)."""
        if not self._hashes:
            return None
        at = bisect.bisect_left(self._hashes, key_hash)
        return self._holders[at % len(self._hashes)][0]

    def points(self) -> list[tuple[int, C]]:
        return [(value, holders[0]) for value, holders in zip(self._hashes, self._holders)]
