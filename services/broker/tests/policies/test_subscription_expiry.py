"""subscriptionExpirationTime of a namespace (minutes), over broker.conf's
subscriptionExpirationTimeMinutes (0: never): a durable subscription with no consumer for
longer is deleted by the broker's periodic check (every
subscriptionExpiryCheckIntervalInMinutes), as Apache's broker does. Subscriptions with a
consumer connected, readers and compaction's `__compaction` are kept.

The policy counts in minutes, so the check is driven here with a manual clock over a real
managed ledger, called directly and as the broker's periodic task (a standalone would take
a real minute for the smallest expiration)."""

from __future__ import annotations

import asyncio
import pathlib
import time
from collections.abc import AsyncIterator

import pytest
from pulsar_broker import config as broker_config
from pulsar_broker import resources
from pulsar_broker import testing as broker_testing
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.managed_ledger import config as ml_config
from pulsar_broker.subscriptions.consumer import Consumer, SubType
from pulsar_broker.topics import policies
from pulsar_broker.topics.compaction import compactor
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_broker.topics.policy_enforcer import IdleSubscriptions, PolicyEnforcer
from pulsar_common import clock, naming

MINUTE_MS = 60_000

# -- the pure decision and the resolution -----------------------------------------------------


def test_a_subscription_expires_only_after_the_whole_time_without_consumers():
    idle = IdleSubscriptions()
    key = ("persistent://public/default/t", "s")
    assert not idle.expired(key, False, MINUTE_MS, 0)
    assert not idle.expired(key, False, MINUTE_MS, MINUTE_MS)  # not more than the time yet
    assert not idle.expired(key, True, MINUTE_MS, MINUTE_MS + 1)  # a consumer came back
    assert not idle.expired(key, False, MINUTE_MS, MINUTE_MS + 2)
    assert not idle.expired(key, False, MINUTE_MS, 2 * MINUTE_MS + 2)
    assert idle.expired(key, False, MINUTE_MS, 2 * MINUTE_MS + 3)
    assert not idle.expired(key, False, 0, 10**12)  # 0: never


def test_the_namespace_policy_wins_over_the_broker_setting():
    conf = broker_config.BrokerConfig(subscription_expiration_time_minutes=30)
    ledger = ml_config.ManagedLedgerConfig()
    assert policies.resolve(None, conf, ledger).subscription_expiration_minutes == 30
    stored = {"subscription_expiration_time_minutes": 5}
    assert policies.resolve(stored, conf, ledger).subscription_expiration_minutes == 5
    # As Apache since 2.8: a namespace's 0 means never, whatever the broker says.
    never = {"subscription_expiration_time_minutes": 0}
    assert policies.resolve(never, conf, ledger).subscription_expiration_minutes == 0


def test_the_broker_defaults_are_apaches():
    conf = broker_config.BrokerConfig()
    assert conf.subscription_expiration_time_minutes == 0
    assert conf.subscription_expiry_check_interval_in_minutes == 5


# -- the check, in process over a real managed ledger, with a manual clock ------------------


@pytest.fixture
async def checked_topic(tmp_path: pathlib.Path) -> AsyncIterator[
        tuple[PersistentTopic, PolicyEnforcer, clock.ManualClock]]:
    manual = clock.ManualClock()
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, manual)
    name = naming.TopicName.parse("persistent://public/default/expiring")
    topic = PersistentTopic(name, await stack.factory.open(name.persistence_name), 100)
    topic.policies = policies.TopicPolicies(subscription_expiration_minutes=1)
    enforcer = PolicyEnforcer(broker_config.BrokerConfig(), stack.factory.default_config,
                              resources.PulsarResources(stack.store), lambda: [topic],
                              now_ms=manual)
    yield topic, enforcer, manual
    await topic.close()
    await stack.stop()


async def _subscribe(topic: PersistentTopic, name: str, durable: bool = True):
    return await topic.subscribe(name, SubType.SHARED, durable, ml.InitialPosition.EARLIEST,
                                 None, False)


def _cursors(topic: PersistentTopic) -> set[str]:
    return {cursor.name for cursor in topic.ledger.cursors}


async def test_the_check_deletes_only_subscriptions_idle_past_the_expiration(checked_topic):
    topic, enforcer, manual = checked_topic
    await _subscribe(topic, "idle")
    busy = await _subscribe(topic, "busy")
    busy.add_consumer(Consumer(broker_testing.RecordingConnection(), 1, "c1", SubType.SHARED,
                               0, -1, 0))
    reader = await _subscribe(topic, "reader", durable=False)
    reader.add_consumer(Consumer(broker_testing.RecordingConnection(), 2, "c2",
                                 SubType.SHARED, 0, -1, 0))
    await _subscribe(topic, compactor.COMPACTION_SUBSCRIPTION)

    await enforcer.check_subscription_expiry()  # first seen idle now
    manual.advance(minutes=1)
    await enforcer.check_subscription_expiry()
    assert "idle" in topic.subscriptions  # exactly the expiration: not more yet
    manual.advance(ms=1)
    await enforcer.check_subscription_expiry()

    assert set(topic.subscriptions) == {"busy", "reader", compactor.COMPACTION_SUBSCRIPTION}
    assert "idle" not in _cursors(topic)
    assert {"busy", compactor.COMPACTION_SUBSCRIPTION} <= _cursors(topic)


async def test_a_consumer_coming_back_restarts_the_count(checked_topic):
    topic, enforcer, manual = checked_topic
    subscription = await _subscribe(topic, "returning")
    await enforcer.check_subscription_expiry()
    manual.advance(seconds=50)
    consumer = Consumer(broker_testing.RecordingConnection(), 1, "c", SubType.SHARED, 0, -1, 0)
    subscription.add_consumer(consumer)
    await enforcer.check_subscription_expiry()
    subscription.remove_consumer(consumer)
    manual.advance(seconds=50)
    await enforcer.check_subscription_expiry()
    manual.advance(seconds=50)
    await enforcer.check_subscription_expiry()
    assert "returning" in topic.subscriptions
    manual.advance(seconds=11)
    await enforcer.check_subscription_expiry()
    assert "returning" not in topic.subscriptions


async def test_nothing_expires_without_an_expiration(checked_topic):
    topic, enforcer, manual = checked_topic
    topic.policies = policies.TopicPolicies(subscription_expiration_minutes=0)
    await _subscribe(topic, "kept")
    await enforcer.check_subscription_expiry()
    manual.advance(minutes=10**6)
    await enforcer.check_subscription_expiry()
    assert "kept" in topic.subscriptions


# -- the periodic check the broker starts ---------------------------------------------------


async def test_the_broker_checks_every_subscription_expiry_interval(tmp_path: pathlib.Path):
    """start() runs the check every subscriptionExpiryCheckIntervalSeconds (the broker's own
    PolicyEnforcer, as a standalone starts it); the clock it reads is moved a minute at a
    time, so waiting out the one-minute expiration takes no real minute."""
    manual = clock.ManualClock()
    stack = await broker_testing.start_managed_ledger_stack(tmp_path, manual)
    name = naming.TopicName.parse("persistent://public/default/checked")
    topic = PersistentTopic(name, await stack.factory.open(name.persistence_name), 100)
    topic.policies = policies.TopicPolicies(subscription_expiration_minutes=1)
    # broker.conf's minute: the enforcer gives loaded topics their resolved policies again.
    conf = broker_config.BrokerConfig(subscription_expiration_time_minutes=1,
                                      subscription_expiry_check_interval_seconds=0.05)
    enforcer = PolicyEnforcer(conf, stack.factory.default_config,
                              resources.PulsarResources(stack.store), lambda: [topic],
                              now_ms=manual)
    await _subscribe(topic, "idle")
    enforcer.start()
    try:
        deadline = time.monotonic() + 10
        while "idle" in topic.subscriptions:
            assert time.monotonic() < deadline, "the periodic check never deleted it"
            await asyncio.sleep(0.1)
            manual.advance(minutes=1)
        assert "idle" not in _cursors(topic)
    finally:
        await enforcer.close()
        await topic.close()
        await stack.stop()
