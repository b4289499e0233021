"""Real parts for managed-ledger tests: the bookie engine and RocksDB metadata store in tmp dirs.

Fixtures hand out package objects only (test modules cannot import this file).
`stack` starts one "broker" worth of parts (pulsar_broker.testing.ManagedLedgerStack);
`make_stack` starts more, e.g. another over the same directories after a stop, as a
broker restart would.
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_common import clock

#: The stack of one broker: bookie engine, metadata store, ledger client, ML factory.
Stack = broker_testing.ManagedLedgerStack

StartStack = Callable[..., Awaitable[Stack]]


@pytest.fixture
def manual_clock() -> clock.ManualClock:
    return clock.ManualClock()


@pytest.fixture
async def make_stack(
    tmp_path: pathlib.Path, manual_clock: clock.ManualClock
) -> AsyncIterator[StartStack]:
    """Start a stack over tmp_path (or root) with config overrides; all are stopped at the end."""
    started: list[Stack] = []

    async def make(root: pathlib.Path | None = None, **overrides: Any) -> Stack:
        stack = await broker_testing.start_managed_ledger_stack(
            root or tmp_path, manual_clock, **overrides)
        started.append(stack)
        return stack

    yield make
    for stack in reversed(started):
        await stack.stop()


@pytest.fixture
async def stack(make_stack: StartStack) -> Stack:
    return await make_stack()
