"""Counters, periodic rate lines and the final summary printed by `pulsar-perf`.

The line formats follow Apache's pulsar-perf so that people who read its
output (or grep it) find the same words here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from pulsar_client_tools.perf import histogram


@dataclass(frozen=True)
class Totals:
    messages: int
    bytes: int
    failures: int


class Throughput:
    """Messages, bytes and failures counted from client callback threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages = 0
        self._bytes = 0
        self._failures = 0

    def add(self, size: int) -> None:
        self.add_many(1, size)

    def add_many(self, messages: int, size: int) -> None:
        with self._lock:
            self._messages += messages
            self._bytes += size

    def fail_many(self, messages: int) -> None:
        with self._lock:
            self._failures += messages

    def totals(self) -> Totals:
        with self._lock:
            return Totals(self._messages, self._bytes, self._failures)


def latency_text(summary: histogram.LatencySummary) -> str:
    p = summary.percentiles_ms
    return (
        f"Latency: mean: {summary.mean_ms:.3f} ms - med: {p[50.0]:.3f} - "
        f"95pct: {p[95.0]:.3f} - 99pct: {p[99.0]:.3f} - 99.9pct: {p[99.9]:.3f} - "
        f"99.99pct: {p[99.99]:.3f} - Max: {summary.max_ms:.3f}"
    )


def mbit_per_s(byte_count: int, seconds: float) -> float:
    return byte_count * 8 / 1_000_000 / seconds if seconds > 0 else 0.0


def interval_line(
    verb: str,
    total: Totals,
    previous: Totals,
    seconds: float,
    latency: histogram.LatencySummary,
    with_failures: bool,
) -> str:
    messages = total.messages - previous.messages
    rate = messages / seconds if seconds > 0 else 0.0
    line = (
        f"Throughput {verb}: {total.messages:,} msg --- {rate:.1f} msg/s --- "
        f"{mbit_per_s(total.bytes - previous.bytes, seconds):.3f} Mbit/s --- "
    )
    if with_failures:
        failures = (total.failures - previous.failures) / seconds if seconds > 0 else 0.0
        line += f"failure {failures:.1f} msg/s --- "
    return line + latency_text(latency)


def summary_lines(
    noun: str, total: Totals, seconds: float, latency: histogram.LatencySummary
) -> list[str]:
    rate = total.messages / seconds if seconds > 0 else 0.0
    return [
        f"Aggregated throughput stats --- {total.messages:,} records {noun} --- "
        f"{rate:.3f} msg/s --- {mbit_per_s(total.bytes, seconds):.3f} Mbit/s"
        + (f" --- {total.failures:,} failed" if total.failures else ""),
        f"Aggregated latency stats --- {latency_text(latency)}",
    ]


class Reporter:
    """Prints one rate line every `interval_s` until stopped, then the final summary."""

    def __init__(
        self,
        verb: str,
        noun: str,
        throughput: Throughput,
        recorder: histogram.Recorder,
        interval_s: float,
        with_failures: bool,
        emit: Callable[[str], None],
    ) -> None:
        self._verb = verb
        self._noun = noun
        self._throughput = throughput
        self._recorder = recorder
        self._interval_s = interval_s
        self._with_failures = with_failures
        self._emit = emit
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="perf-reporter", daemon=True)
        self._started = time.monotonic()

    def start(self) -> None:
        self._started = time.monotonic()
        self._thread.start()

    def _run(self) -> None:
        previous = Totals(0, 0, 0)
        last = self._started
        while not self._stopped.wait(self._interval_s):
            now = time.monotonic()
            total = self._throughput.totals()
            latency = self._recorder.interval().summary()
            self._emit(
                interval_line(self._verb, total, previous, now - last, latency, self._with_failures)
            )
            previous, last = total, now

    def finish(self, histogram_file: str | None = None
               ) -> tuple[Totals, float, histogram.LatencySummary]:
        """Stop the periodic lines and print the summary (and write the latency distribution
        to histogram_file when given); returns what it printed."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()
        elapsed = time.monotonic() - self._started
        self._recorder.interval()
        total = self._throughput.totals()
        latency = self._recorder.cumulative.summary()
        for line in summary_lines(self._noun, total, elapsed, latency):
            self._emit(line)
        if histogram_file:
            with open(histogram_file, "w", encoding="utf-8") as out:
                out.write(histogram.distribution_text(self._recorder.cumulative))
        return total, elapsed, latency
