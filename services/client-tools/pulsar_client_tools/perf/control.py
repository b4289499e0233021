"""When a perf run stops: a message count, a duration, or SIGINT/SIGTERM, whichever comes first."""

from __future__ import annotations

import os
import signal
import threading
import time
from types import FrameType


class StopControl:
    """A stop flag set by a deadline or a signal; loops poll `should_stop()` cheaply."""

    def __init__(self, duration_s: float) -> None:
        self.event = threading.Event()
        self._duration_s = duration_s
        self._deadline: float | None = None

    def begin(self) -> None:
        """Start the clock: the duration counts from the first message, not from connecting."""
        if self._duration_s > 0:
            self._deadline = time.monotonic() + self._duration_s

    def install_signal_handlers(self) -> None:
        """Ctrl-C and SIGTERM end the run gracefully, so the summary is still printed."""
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.event.is_set():
            # A second signal while the first is being honoured (for example while the
            # client waits on an unreachable broker): leave now, without a summary.
            os._exit(128 + signum)
        self.event.set()

    def should_stop(self) -> bool:
        if self.event.is_set():
            return True
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self.event.set()
            return True
        return False

    def remaining_s(self, cap_s: float) -> float:
        if self._deadline is None:
            return cap_s
        return max(0.0, min(cap_s, self._deadline - time.monotonic()))
