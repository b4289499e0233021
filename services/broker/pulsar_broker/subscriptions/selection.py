"""Pure choices of which consumer gets what: Failover's active consumer, Key_Shared's
hash ranges. No I/O; the dispatchers call these with their current consumers.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

#: Key_Shared hashes keys into [0, HASH_RANGE_SIZE).
HASH_RANGE_SIZE = 2**16


class Ranked(Protocol):
    @property
    def priority_level(self) -> int: ...

    @property
    def consumer_name(self) -> str: ...


R = TypeVar("R", bound=Ranked)


def failover_order(consumers: Sequence[R]) -> list[R]:
    """Consumers in the order Failover promotes them: priority level, then name (stable)."""
    return sorted(consumers, key=lambda c: (c.priority_level, c.consumer_name))


def failover_active(consumers: Sequence[R], partition_index: int) -> R | None:
    """The active consumer: the first in order for a plain topic; for partition i of a
    partitioned topic, consumers at the highest priority take partitions round-robin so
    that several consumers share a partitioned topic's partitions.
    """
    if not consumers:
        return None
    ordered = failover_order(consumers)
    if partition_index < 0:
        return ordered[0]
    top = [c for c in ordered if c.priority_level == ordered[0].priority_level]
    return top[partition_index % len(top)]


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 (x86, 32-bit), the hash Pulsar uses for sticky keys."""
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & 0xFFFFFFFF
    length = len(data)
    rounded = length & ~3
    for i in range(0, rounded, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * c1) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = data[rounded:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h


def sticky_key_hash(key: bytes) -> int:
    return murmur3_32(key) % HASH_RANGE_SIZE


C = TypeVar("C")


@dataclass
class AutoSplitRanges(Generic[C]):
    """Key_Shared AUTO_SPLIT: consumers own contiguous hash ranges covering the whole space.

    A joining consumer takes the upper half of the largest range (ties: the
    lowest range); a leaving consumer's range goes to the consumer owning the
    range just above it (or below, for the last range). A key therefore stays
    with the same consumer for as long as that consumer is connected, unless a
    join splits its range.
    """

    #: Sorted inclusive upper bounds of the ranges, and who owns each.
    _uppers: list[int]
    _owners: list[C]

    @classmethod
    def empty(cls) -> AutoSplitRanges[C]:
        return cls([], [])

    def add(self, consumer: C) -> None:
        if not self._uppers:
            self._uppers.append(HASH_RANGE_SIZE - 1)
            self._owners.append(consumer)
            return
        best, best_size = 0, -1
        for i, upper in enumerate(self._uppers):
            lower = self._uppers[i - 1] + 1 if i else 0
            if upper - lower + 1 > best_size:
                best, best_size = i, upper - lower + 1
        if best_size < 2:
            raise ValueError("no hash range left to split")
        lower = self._uppers[best - 1] + 1 if best else 0
        middle = lower + best_size // 2 - 1
        self._uppers.insert(best, middle)
        self._owners.insert(best, self._owners[best])
        self._owners[best + 1] = consumer

    def remove(self, consumer: C) -> None:
        while consumer in self._owners:
            i = self._owners.index(consumer)
            if len(self._owners) == 1:
                self._uppers.clear()
                self._owners.clear()
                return
            if i == len(self._owners) - 1:
                # The last range merges into the one below it.
                del self._uppers[i - 1]
                del self._owners[i]
            else:
                del self._uppers[i]
                del self._owners[i]

    def owner(self, key_hash: int) -> C | None:
        if not self._uppers:
            return None
        return self._owners[bisect.bisect_left(self._uppers, key_hash)]

    def ranges(self) -> list[tuple[int, int, C]]:
        result = []
        for i, upper in enumerate(self._uppers):
            lower = self._uppers[i - 1] + 1 if i else 0
            result.append((lower, upper, self._owners[i]))
        return result
