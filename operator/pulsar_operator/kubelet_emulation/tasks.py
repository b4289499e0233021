"""Stopping an asyncio task from another one, without swallowing the caller's own cancellation.

`task.cancel(); with suppress(CancelledError): await task` is a trap: if the
caller is itself cancelled while it waits, the suppress eats the caller's
CancelledError and it carries on as if nothing happened (here: a container
loop went on to restart its process while its pod was being stopped, and the
stop waited for it forever). `asyncio.wait` never raises the awaited task's
outcome, so only the caller's own cancellation propagates.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    pending = [task for task in tasks if task is not None]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.wait(pending)
