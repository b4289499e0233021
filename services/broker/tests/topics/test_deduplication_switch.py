"""Switching deduplication on and off on a loaded topic: the last switch wins, also when
one comes while the ids are still being loaded (a policy change racing another)."""

from __future__ import annotations

import asyncio
import pathlib

from pulsar_broker import testing as broker_testing
from pulsar_broker.topics import deduplication
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_common import clock, naming


async def test_switching_off_while_the_ids_load_leaves_deduplication_off(
        tmp_path: pathlib.Path) -> None:
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, clock.ManualClock())
    name = naming.TopicName.parse("persistent://public/default/switched")
    topic = PersistentTopic(name, await stack.factory.open(name.persistence_name), 100)
    try:
        enabling = asyncio.ensure_future(topic.enable_deduplication())
        await asyncio.sleep(0)
        assert not enabling.done()  # still loading its ids
        await topic.disable_deduplication()
        await enabling
        assert topic.deduplication is None
        await topic.enable_deduplication()
        assert topic.deduplication is not None
        assert deduplication.CURSOR_NAME in {c.name for c in topic.ledger.cursors}
    finally:
        await topic.close()
        await stack.stop()
