"""Watches the ledger disks' usage and decides when the bookie must be read-only.

A bookie goes read-only when any ledger directory's filesystem is fuller
than diskUsageThreshold and becomes writable again only once every one is
below diskUsageLwmThreshold (the gap keeps it from flapping). The decision is
a pure function; the monitor runs it on a timer with a usage probe that tests
can replace (the default asks the filesystem with shutil.disk_usage).

A journal that failed for lack of space is retried (`journal_has_room`) only
once every journal disk is below diskUsageLwmThreshold too; after each check
the monitor calls `after_check`, where the bookie does that.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import shutil
from collections.abc import Awaitable, Callable, Sequence

from pulsar_common.metadata import tasks

log = logging.getLogger(__name__)

#: Fraction of a filesystem in use (0.0 .. 1.0) for a directory on it.
UsageProbe = Callable[[str], float]


def filesystem_usage(directory: str) -> float:
    usage = shutil.disk_usage(directory)
    return usage.used / usage.total if usage.total else 1.0


@dataclasses.dataclass(frozen=True)
class DiskThresholds:
    full: float
    writable_below: float

    def validate(self) -> None:
        if not 0.0 < self.full <= 1.0 or not 0.0 < self.writable_below <= self.full:
            raise ValueError(
                "need 0 < diskUsageLwmThreshold <= diskUsageThreshold <= 1, got "
                f"{self.writable_below} and {self.full}"
            )


def journal_may_retry(usage: float, thresholds: DiskThresholds) -> bool:
    """Whether a journal that failed for lack of space may write again, given its disk's usage."""
    return usage < thresholds.writable_below


def decide_read_only(read_only: bool, usage: float, thresholds: DiskThresholds) -> bool:
    """Whether the bookie should be read-only, given the fullest ledger disk's usage."""
    if usage >= thresholds.full:
        return True
    return read_only and usage >= thresholds.writable_below


class DiskMonitor:
    """Checks usage every interval and calls on_change(read_only) when the decision flips."""

    def __init__(
        self,
        directories: Sequence[str],
        thresholds: DiskThresholds,
        interval_s: float,
        on_change: Callable[[bool], Awaitable[None]],
        *,
        probe: UsageProbe = filesystem_usage,
        journal_directories: Sequence[str] = (),
        after_check: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        thresholds.validate()
        self._directories = list(directories)
        self.thresholds = thresholds
        self._interval_s = interval_s
        self._on_change = on_change
        self._probe = probe
        self._journal_directories = list(journal_directories)
        self._after_check = after_check
        self.read_only = False
        self.last_usage = 0.0
        self._task: asyncio.Task[None] | None = None

    def usage(self) -> float:
        return max(self._probe(d) for d in self._directories)

    def journal_has_room(self) -> bool:
        """Whether every journal disk is below diskUsageLwmThreshold (see journal_may_retry)."""
        usage = max((self._probe(d) for d in self._journal_directories), default=0.0)
        return journal_may_retry(usage, self.thresholds)

    async def check(self) -> bool:
        """Run one check now; returns the (possibly new) read-only decision."""
        self.last_usage = usage = self.usage()
        decided = decide_read_only(self.read_only, usage, self.thresholds)
        if decided != self.read_only:
            log.warning(
                "ledger disk usage %.1f%%: bookie becomes %s",
                usage * 100,
                "read-only" if decided else "writable",
            )
            self.read_only = decided
            await self._on_change(decided)
        return decided

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="disk-monitor")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self._interval_s)
            try:
                await self.check()
                if self._after_check is not None:
                    await self._after_check()
            except Exception:
                log.exception("disk check failed")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await tasks.cancel_and_wait(task)
