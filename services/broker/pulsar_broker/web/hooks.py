"""Hooks the broker's data path calls to feed the HTTP side's telemetry.

This module imports nothing beyond the standard library, so topics and the
managed ledger can call it without depending on aiohttp or OpenTelemetry.
Each running web application registers a recorder; with none registered a
call costs one empty loop.
"""

from __future__ import annotations

from collections.abc import Callable

#: (topic name, seconds the add took, entry size in bytes) -> None
AddEntryRecorder = Callable[[str, float, int], None]

_add_entry_recorders: list[AddEntryRecorder] = []


def record_add_entry(topic: str, seconds: float, size_bytes: int) -> None:
    """Call once per entry added to a topic's managed ledger: the time the add took, its size."""
    for recorder in _add_entry_recorders:
        recorder(topic, seconds, size_bytes)


def add_add_entry_recorder(recorder: AddEntryRecorder) -> None:
    _add_entry_recorders.append(recorder)


def remove_add_entry_recorder(recorder: AddEntryRecorder) -> None:
    if recorder in _add_entry_recorders:
        _add_entry_recorders.remove(recorder)


def add_entry_recorder_count() -> int:
    return len(_add_entry_recorders)
