"""Repeated log lines are rate-limited per kind (logger, level, template): a burst passes,
the rest are counted and the next line that passes says how many were left out."""

from __future__ import annotations

import logging

from pulsar_common import log_limits


def _record(msg: str, *args: object, name: str = "x", level: int = logging.WARNING) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_a_burst_passes_then_lines_are_counted_and_summarized() -> None:
    now = [0.0]
    line_filter = log_limits.RepeatedLineFilter(burst=3, interval_s=10, clock=lambda: now[0])
    passed = [line_filter.filter(_record("add %s failed", i)) for i in range(1000)]
    assert passed.count(True) == 3 and line_filter.suppressed_total == 997
    now[0] = 10.0
    summary = _record("add %s failed", 1000)
    assert line_filter.filter(summary)
    assert summary.getMessage() == "add 1000 failed [997 similar lines left out in the last 10 s]"


def test_kinds_are_counted_apart() -> None:
    line_filter = log_limits.RepeatedLineFilter(burst=1, interval_s=10, clock=lambda: 0.0)
    assert line_filter.filter(_record("a %s", 1))
    assert line_filter.filter(_record("b %s", 1))
    assert line_filter.filter(_record("a %s", 1, name="other"))
    assert line_filter.filter(_record("a %s", 1, level=logging.ERROR))
    assert not line_filter.filter(_record("a %s", 2))


def test_install_filters_every_handler_of_the_logger() -> None:
    logger = logging.getLogger("log-limits-test")
    handler = logging.NullHandler()
    logger.addHandler(handler)
    try:
        installed = log_limits.install(logger, burst=2)
        assert installed in handler.filters
    finally:
        logger.removeHandler(handler)
