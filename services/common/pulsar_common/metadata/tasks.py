"""Stopping background tasks without swallowing the caller's own cancellation."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

log = logging.getLogger(__name__)


async def cancel_and_wait(task: asyncio.Task[Any], timeout_s: float | None = None) -> None:
    """Cancel task and wait for it to finish.

    Unlike `with suppress(CancelledError): await task`, a cancellation of the
    caller itself still propagates; the task's own outcome is only logged.
    """
    if task is asyncio.current_task():
        return
    task.cancel()
    await wait_quietly(task, timeout_s)


async def wait_quietly(task: asyncio.Task[Any], timeout_s: float | None = None) -> None:
    """Wait for task to end (up to timeout_s); log its failure instead of raising it."""
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if task in done and not task.cancelled() and task.exception() is not None:
        log.warning("background task %s failed", task.get_name(), exc_info=task.exception())
