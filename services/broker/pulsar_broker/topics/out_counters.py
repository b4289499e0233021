"""Dispatch counters that only grow, although the consumers that hold them come and go.

A consumer counts the messages and bytes sent to it; when it disconnects its
counts leave with it. An OutCounters remembers the last counts it saw for
each consumer under a key (a topic, or a subscription) and keeps them as
"retired" once the consumer is gone, so the totals never go backwards. It
keeps a reference to each consumer it saw, so a departed consumer is retired
with its final counts, including what it gathered after the last
observation. A consumer that comes and goes entirely between two
observations (scrapes and rate samples) is not seen at all. Load reports,
the REST layer's rates and the metrics each keep their own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class OutCounters:
    def __init__(self) -> None:
        self._retired: dict[str, tuple[int, int]] = {}
        self._seen: dict[str, dict[int, tuple[Any, int, int]]] = {}
        self._observed: set[str] = set()

    def totals(self, key: str, consumers: Iterable[Any]) -> tuple[int, int]:
        """(messages, bytes) dispatched under key, including departed consumers."""
        current = {id(c): (c, int(c.msg_out), int(c.bytes_out)) for c in consumers}
        retired_msgs, retired_bytes = self._retired.get(key, (0, 0))
        for consumer_id, (consumer, _, _) in self._seen.get(key, {}).items():
            if current.get(consumer_id, (None, 0, 0))[0] is not consumer:
                retired_msgs += int(consumer.msg_out)
                retired_bytes += int(consumer.bytes_out)
        self._retired[key] = (retired_msgs, retired_bytes)
        self._seen[key] = current
        self._observed.add(key)
        return (retired_msgs + sum(m for _, m, _ in current.values()),
                retired_bytes + sum(b for _, _, b in current.values()))

    def end_pass(self) -> None:
        """Forget keys not observed since the last pass (unloaded topics, removed subscriptions)."""
        for key in [k for k in self._seen if k not in self._observed]:
            self._seen.pop(key, None)
            self._retired.pop(key, None)
        self._observed = set()
