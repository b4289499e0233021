"""Hooks the broker's data path calls to feed the HTTP side's telemetry.

This module imports nothing beyond the standard library, so topics and the
managed ledger can call it without depending on aiohttp or OpenTelemetry.
Each running web application registers a recorder; with none registered a
call costs one empty loop.
"""

from __future__ import annotations

from collections.abc import Callable

#: (topic name, seconds) -> None
LatencyRecorder = Callable[[str, float], None]

_add_entry_recorders: list[LatencyRecorder] = []


def record_add_entry_latency(topic: str, seconds: float) -> None:
    """Call once per entry added to a topic's managed ledger, with the time the add took."""
    for recorder in _add_entry_recorders:
        recorder(topic, seconds)


def add_add_entry_recorder(recorder: LatencyRecorder) -> None:
    _add_entry_recorders.append(recorder)


def remove_add_entry_recorder(recorder: LatencyRecorder) -> None:
    if recorder in _add_entry_recorders:
        _add_entry_recorders.remove(recorder)


def add_entry_recorder_count() -> int:
    return len(_add_entry_recorders)
