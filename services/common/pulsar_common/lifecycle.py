"""The run loop every long-running `pulsar <service>` shares: start, print a banner, wait for
SIGTERM or SIGINT, stop (also when starting failed half way)."""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def run_until_signalled(start: Callable[[], Awaitable[str]],
                              stop: Callable[[], Awaitable[None]]) -> None:
    """start(), print its banner, wait for SIGTERM or SIGINT, then stop() (also on failure)."""
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    try:
        print(await start(), flush=True)
        # What start() made (modules, settings, the metadata store's and the servers'
        # objects) lives until the process ends: keep the collector from walking it on
        # every full collection, whose pause grows with the heap.
        gc.freeze()
        await stopping.wait()
        log.info("shutting down")
    finally:
        await stop()
