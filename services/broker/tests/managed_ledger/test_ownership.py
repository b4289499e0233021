"""When another broker takes a managed ledger over mid-stream, nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
from typing import Any

from pulsar_broker.managed_ledger import api, errors, factory

NAME = "public/default/persistent/moving"
WAIT_S = 60
#: Safety stop for the old owner's producer (it is normally fenced long before).
ADDS_MAX = 5000
#: Takeover attempts. With a rollover every 20 entries and 10 adds in flight, the old owner
#: rewrites the ledger list every few milliseconds and wins most races against an open
#: (20 attempts all lost in about 1 run of 12 here, so roughly 9 attempts in 10 lose); what this
#: test checks is that no acknowledged entry is lost once the takeover wins.
TAKEOVER_ATTEMPTS = 300


async def open_with_retry(second: factory.ManagedLedgerFactoryImpl) -> Any:
    """A takeover can lose a CAS race against the old owner's rollover; then it tries again."""
    for _ in range(TAKEOVER_ATTEMPTS):
        try:
            return await second.open(NAME)
        except errors.ManagedLedgerFencedError:
            continue
    raise AssertionError("the takeover never succeeded")


async def test_takeover_during_concurrent_adds_keeps_every_acknowledged_entry(
    make_stack: Any,
) -> None:
    stack = await make_stack(max_entries_per_ledger=20)
    old = await stack.factory.open(NAME)
    await old.open_cursor("sub", api.InitialPosition.EARLIEST)
    acknowledged: dict[api.Position, bytes] = {}
    failures: list[BaseException] = []
    halfway = asyncio.Event()

    async def add(i: int) -> None:
        data = b"entry-%d" % i
        try:
            position = await old.add_entry(data)
        except errors.ManagedLedgerError as exc:
            failures.append(exc)
            return
        acknowledged[position] = data
        if len(acknowledged) == 40:
            halfway.set()

    async def produce() -> int:
        """Keep 10 adds in flight until the old owner refuses one."""
        pending: set[asyncio.Future[None]] = set()
        sent = 0
        while not failures and sent < ADDS_MAX:
            while len(pending) < 10:
                pending.add(asyncio.ensure_future(add(sent)))
                sent += 1
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if pending:
            await asyncio.wait(pending)
        return sent

    producing = asyncio.ensure_future(produce())
    await asyncio.wait_for(halfway.wait(), WAIT_S)
    second = factory.ManagedLedgerFactoryImpl(
        stack.store, stack.client, stack.factory.default_config,
        now_ms=stack.clock, maintenance_interval_s=None,
    )
    new = await open_with_retry(second)
    sent = await asyncio.wait_for(producing, WAIT_S)
    assert failures, "the old owner kept writing after the takeover"
    assert all(isinstance(f, errors.ManagedLedgerFencedError) for f in failures), failures
    assert len(acknowledged) + len(failures) == sent
    assert old.is_fenced
    # Acknowledged positions are in order of the adds that got them.
    assert list(acknowledged) == sorted(acknowledged)

    after = await new.add_entry(b"new owner")
    reader = new.new_non_durable_cursor(api.EARLIEST)
    stored = {}
    while reader.has_more_entries():
        for entry in await reader.read_entries(50):
            stored[entry.position] = entry.data
    for position, data in acknowledged.items():
        assert stored.get(position) == data, position
    assert stored[after] == b"new owner"
    assert max(stored) == after
    assert new.cursors[0].number_of_entries_in_backlog == len(stored)
    await old.close()
    await second.shutdown()
