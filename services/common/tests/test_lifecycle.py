"""run_until_signalled: start, banner, wait for SIGTERM/SIGINT, stop; what start() made is
frozen out of the garbage collector's full collections while the service runs."""

from __future__ import annotations

import asyncio
import gc
import os
import signal

from pulsar_common import lifecycle


async def test_the_service_runs_until_sigterm_and_its_start_objects_are_frozen(capsys) -> None:
    events: list[str] = []
    frozen_while_running: list[int] = []

    async def start() -> str:
        events.append("start")
        loop = asyncio.get_running_loop()
        loop.call_soon(lambda: frozen_while_running.append(gc.get_freeze_count()))
        loop.call_soon(os.kill, os.getpid(), signal.SIGTERM)
        return "banner"

    async def stop() -> None:
        events.append("stop")

    try:
        await asyncio.wait_for(lifecycle.run_until_signalled(start, stop), 10)
    finally:
        gc.unfreeze()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    assert events == ["start", "stop"]
    assert capsys.readouterr().out == "banner\n"
    assert frozen_while_running and frozen_while_running[0] > 0
