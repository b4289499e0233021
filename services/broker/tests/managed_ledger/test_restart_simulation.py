"""Seeded runs over real parts: after any mix of adds, acknowledgements, rollovers and
restarts (clean or crash), a durable cursor redelivers exactly the entries that were
not acknowledged. Cursor positions are persisted on every change here, so nothing
acknowledged may come back. A failure names its seed; rerun with SEEDS = [seed]."""

from __future__ import annotations

import pathlib
import random
from typing import Any

from pulsar_broker.managed_ledger import api

NAME = "public/default/persistent/simulated"
SEEDS = range(6)
STEPS = 24
ACTIONS = ["add"] * 3 + ["ack"] * 3 + ["cumulative", "restart", "crash"]


async def unacknowledged(ml: Any, sub: Any) -> list[api.Position]:
    sub.rewind()
    seen: list[api.Position] = []
    while sub.has_more_entries():
        seen.extend(e.position for e in await sub.read_entries(50))
    return seen


async def run_seed(make_stack: Any, root: pathlib.Path, seed: int) -> None:
    rng = random.Random(seed)
    config = {"max_entries_per_ledger": rng.choice([1, 2, 3, 5])}
    stack = await make_stack(root=root, **config)
    ml = await stack.factory.open(NAME)
    sub = await ml.open_cursor("sub", api.InitialPosition.EARLIEST)
    written: list[api.Position] = []
    acked: set[api.Position] = set()
    for step in range(STEPS):
        action = rng.choice(ACTIONS)
        where = f"seed {seed} step {step} {action}"
        if action == "add":
            for _ in range(rng.randint(1, 4)):
                written.append(await ml.add_entry(b"%d" % len(written)))
        elif action == "ack" and written:
            chosen = rng.sample(written, k=min(len(written), rng.randint(1, 3)))
            await sub.delete(chosen)
            acked.update(chosen)
        elif action == "cumulative" and written:
            upto = rng.choice(written)
            await sub.mark_delete(max(upto, sub.mark_delete_position))
            acked.update(p for p in written if p <= upto)
        elif action in ("restart", "crash"):
            await stack.stop(clean=action == "restart")
            stack = await make_stack(root=root, **config)
            ml = await stack.factory.open(NAME)
            sub = ml.cursors[0]
        expected = [p for p in written if p not in acked]
        assert await unacknowledged(ml, sub) == expected, where
        assert sub.number_of_entries_in_backlog == len(expected), where
        for position in written:
            assert sub.is_acknowledged(position) == (position in acked), where
    entries = [await ml.read_entry(p) for p in written if p not in acked]
    assert [int(e.data) for e in entries] == [
        i for i, p in enumerate(written) if p not in acked
    ], f"seed {seed}: data"
    await stack.stop()


async def test_cursor_redelivers_exactly_the_unacknowledged_entries_across_restarts(
    make_stack: Any, tmp_path: pathlib.Path
) -> None:
    for seed in SEEDS:
        await run_seed(make_stack, tmp_path / f"seed-{seed}", seed)
