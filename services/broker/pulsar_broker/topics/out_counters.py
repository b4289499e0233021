"""Dispatch counters that only grow, although the consumers that hold them come and go.

A consumer counts the messages and bytes sent to it; when it disconnects its
counts leave with it. An OutCounters remembers the consumers it saw under
each key (a topic, or a subscription) and keeps the counts of each one gone
as "retired", so the totals never go backwards. It keeps a reference to each
consumer it saw, so a departed consumer is retired with its final counts,
including what it gathered after the last observation. A consumer that comes
and goes entirely between two observations (scrapes and rate samples) is not
seen at all. Load reports, the REST layer's rates and the metrics each keep
their own.

Observing a key whose consumers are the same objects as last time (the
common case, and every idle topic) allocates nothing but the consumer list's
copy: a pass over 10,000 idle topics is one comparison and one sum each.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class OutCounters:
    def __init__(self) -> None:
        self._retired: dict[str, tuple[int, int]] = {}
        #: key -> the consumers seen last.
        self._seen: dict[str, tuple[Any, ...]] = {}
        #: key -> the number of the pass that saw it last (kept apart from _seen so that an
        #: unchanged key stores nothing new: objects that outlive a pass feed the cyclic
        #: garbage collector's full collections, a heavy cost on a heap of 10,000 topics).
        self._seen_in: dict[str, int] = {}
        self._pass = 0
        #: Distinct keys observed in the current pass.
        self._observed = 0

    def totals(self, key: str, consumers: Iterable[Any]) -> tuple[int, int]:
        """(messages, bytes) dispatched under key, including departed consumers."""
        current = tuple(consumers)
        previous = self._seen.get(key)
        if self._seen_in.get(key) != self._pass:
            self._observed += 1
            self._seen_in[key] = self._pass
        if previous is None or not _same(previous, current):
            if previous is not None:
                self._retire(key, previous, current)
            self._seen[key] = current
        retired_msgs, retired_bytes = self._retired.get(key, (0, 0))
        return (retired_msgs + sum(int(c.msg_out) for c in current),
                retired_bytes + sum(int(c.bytes_out) for c in current))

    def _retire(self, key: str, previous: tuple[Any, ...], current: tuple[Any, ...]) -> None:
        staying = {id(c) for c in current}
        retired_msgs, retired_bytes = self._retired.get(key, (0, 0))
        for consumer in previous:
            # An id only matches if the object is the one seen: the previous tuple keeps
            # it alive, so its id cannot have been reused.
            if id(consumer) not in staying:
                retired_msgs += int(consumer.msg_out)
                retired_bytes += int(consumer.bytes_out)
        self._retired[key] = (retired_msgs, retired_bytes)

    def end_pass(self) -> None:
        """Forget keys not observed since the last pass (unloaded topics, removed subscriptions)."""
        if self._observed != len(self._seen_in):
            for key in [k for k, seen_in in self._seen_in.items() if seen_in != self._pass]:
                self._seen.pop(key, None)
                self._seen_in.pop(key, None)
                self._retired.pop(key, None)
        self._pass += 1
        self._observed = 0


def _same(previous: tuple[Any, ...], current: tuple[Any, ...]) -> bool:
    return len(previous) == len(current) and all(
        a is b for a, b in zip(previous, current, strict=True))
