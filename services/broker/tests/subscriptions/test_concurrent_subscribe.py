"""Two SUBSCRIBEs to the same new durable subscription arriving together (a client
reconnecting many consumers at once) share one subscription and one dispatcher; no
dispatcher task is ever left pending for the garbage collector to destroy ("Task was
destroyed but it is pending! ... Dispatcher._run()"). In process over a real managed ledger."""

from __future__ import annotations

import asyncio
import gc
import logging
import pathlib
from collections.abc import AsyncIterator

import pytest
from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.subscriptions.consumer import Consumer, SubType
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_common import clock, naming

NAME = "persistent://public/default/concurrent-subscribe"


@pytest.fixture
async def topic(tmp_path: pathlib.Path) -> AsyncIterator[PersistentTopic]:
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, clock.ManualClock())
    name = naming.TopicName.parse(NAME)
    topic = PersistentTopic(name, await stack.factory.open(name.persistence_name), 100)
    yield topic
    await topic.close()
    await stack.stop()


async def test_concurrent_subscribes_share_one_subscription(topic: PersistentTopic) -> None:
    first, second = await asyncio.gather(*(
        topic.subscribe("sub", SubType.SHARED, True, ml.InitialPosition.EARLIEST, None, False)
        for _ in range(2)))
    assert first is second
    assert topic.subscriptions == {"sub": first}


async def test_no_dispatcher_task_is_destroyed_pending(
        topic: PersistentTopic, caplog: pytest.LogCaptureFixture) -> None:
    subscriptions = await asyncio.gather(*(
        topic.subscribe("sub", SubType.SHARED, True, ml.InitialPosition.EARLIEST, None, False)
        for _ in range(2)))
    consumers = [Consumer(broker_testing.RecordingConnection(), i, f"c{i}", SubType.SHARED, 0, -1, 0) for i in range(2)]
    for subscription, consumer in zip(subscriptions, consumers, strict=True):
        subscription.add_consumer(consumer)
    await asyncio.sleep(0)  # the dispatchers' tasks start and wait for permits
    for subscription, consumer in zip(subscriptions, consumers, strict=True):
        subscription.remove_consumer(consumer)
    for _ in range(3):
        await asyncio.sleep(0)  # the woken dispatchers go back to waiting
    del subscriptions, consumers, subscription, consumer
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        gc.collect()
        await asyncio.sleep(0)
    assert "Task was destroyed but it is pending" not in caplog.text
