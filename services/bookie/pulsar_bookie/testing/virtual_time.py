"""An asyncio event loop whose clock jumps to the next timer when nothing is runnable.

Everything scheduled runs in a deterministic order, and sleeps and timeouts
cost no wall time, so a seeded simulation replays exactly and fast.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        super().__init__()
        self._virtual_now = 0.0

    def time(self) -> float:
        return self._virtual_now

    def _run_once(self) -> None:
        ready = getattr(self, "_ready")
        live = [h for h in getattr(self, "_scheduled") if not h.cancelled()]
        if not ready:
            if not live:
                raise DeadlockError(describe_tasks(self))
            self._virtual_now = max(self._virtual_now, min(h.when() for h in live))
        super()._run_once()  # type: ignore[misc]


class DeadlockError(RuntimeError):
    """Nothing can run and nothing is scheduled: some task waits forever."""


def describe_tasks(loop: asyncio.AbstractEventLoop) -> str:
    import io

    out = io.StringIO()
    for task in asyncio.all_tasks(loop):
        task.print_stack(limit=8, file=out)
    return "deadlock; tasks:\n" + out.getvalue()


def run(coro: Coroutine[Any, Any, T]) -> T:
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
