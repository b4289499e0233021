"""The port through which topics report what only their data path can measure.

Most of what `/metrics` shows is read from the topics' own counters at scrape
time. The add-entry statistics (write latency and entry size buckets) need a
sample per entry, so a topic is handed a `TopicTelemetry` when it is built
and calls it once per entry added. The broker service owns one `Recorders`
for all its topics; each web application that serves `/metrics` adds its
recorder to it while it runs. The call is on the publish path: an
implementation must stay a few additions long. `Recorders` also holds the
broker's count of connections whose reading is paused now (throttled, as
Apache's `pulsar_broker_throttled_connections` counts them), which each
connection keeps up to date as it pauses and resumes.
"""

from __future__ import annotations

from typing import Protocol


class TopicTelemetry(Protocol):
    def record_add_entry(self, topic: str, seconds: float, size_bytes: int) -> None:
        """One entry was added to topic's managed ledger: the time the add took, its size."""


class NoTelemetry:
    """Records nothing: what a topic built outside a broker service (a test) gets."""

    def record_add_entry(self, topic: str, seconds: float, size_bytes: int) -> None:
        pass


NO_TELEMETRY = NoTelemetry()


class Recorders:
    """A broker's recorders: passes each sample to every recorder added (none at first)."""

    def __init__(self) -> None:
        self._recorders: tuple[TopicTelemetry, ...] = ()
        #: Connections whose reading is paused now (pending publish requests, publish rate).
        self.throttled_connections = 0

    def connection_throttled(self, throttled: bool) -> None:
        """A connection paused reading (True) or resumed it (False)."""
        self.throttled_connections += 1 if throttled else -1

    def add(self, recorder: TopicTelemetry) -> None:
        self._recorders = (*self._recorders, recorder)

    def remove(self, recorder: TopicTelemetry) -> None:
        self._recorders = tuple(r for r in self._recorders if r is not recorder)

    def __len__(self) -> int:
        return len(self._recorders)

    def record_add_entry(self, topic: str, seconds: float, size_bytes: int) -> None:
        for recorder in self._recorders:
            recorder.record_add_entry(topic, seconds, size_bytes)
