"""Rate limits on repeated log lines, for every service's log handlers.

A failure that repeats per message or per request (a dead bookie under a full
pending queue, a poison entry retried, a flood of bad requests) must not
turn into thousands of identical lines per millisecond: the log stays
readable and the process keeps its CPU for the work. Lines are grouped by
logger, level and message template (not the arguments), so one storm of
"add failed on ledger %s entry %s" counts as one kind of line. Within each
window of `interval_s` the first `burst` lines of a kind pass; the rest are
counted, and the next line of that kind to pass says how many were left out.
"""

from __future__ import annotations

import collections
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

#: Lines of one kind that pass per window, and the window's length.
BURST_LINES = 20
INTERVAL_S = 10.0
#: Kinds of line remembered at once; the least recently seen is forgotten first.
KINDS_MAX = 4096

_Key = tuple[str, int, str]


@dataclass
class _Window:
    started_s: float
    passed: int = 0
    suppressed: int = 0


class RepeatedLineFilter(logging.Filter):
    """Lets `burst` lines of a kind through per `interval_s`; counts and summarizes the rest."""

    def __init__(self, burst: int = BURST_LINES, interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic, kinds_max: int = KINDS_MAX) -> None:
        super().__init__()
        if burst <= 0 or interval_s <= 0 or kinds_max <= 0:
            raise ValueError("burst, interval_s and kinds_max must be positive")
        self.burst = burst
        self.interval_s = interval_s
        self.kinds_max = kinds_max
        self._clock = clock
        self._windows: collections.OrderedDict[_Key, _Window] = collections.OrderedDict()
        #: Lines left out since the start, over all kinds.
        self.suppressed_total = 0

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        window = self._windows.get(key)
        if window is None:
            window = self._windows[key] = _Window(now)
            while len(self._windows) > self.kinds_max:
                self._windows.popitem(last=False)
        else:
            self._windows.move_to_end(key)
        if now - window.started_s >= self.interval_s:
            left_out = window.suppressed
            window.started_s, window.passed, window.suppressed = now, 0, 0
            if left_out:
                record.msg = (f"{record.msg} [{left_out} similar lines left out in the last "
                              f"{self.interval_s:g} s]")
        if window.passed < self.burst:
            window.passed += 1
            return True
        window.suppressed += 1
        self.suppressed_total += 1
        return False


def install(logger: logging.Logger | None = None, burst: int = BURST_LINES,
            interval_s: float = INTERVAL_S) -> RepeatedLineFilter:
    """Add one RepeatedLineFilter to every handler of logger (the root logger by default),
    so it applies to lines from every module; call after the handlers are configured."""
    target = logger or logging.getLogger()
    line_filter = RepeatedLineFilter(burst, interval_s)
    for handler in target.handlers:
        handler.addFilter(line_filter)
    return line_filter
