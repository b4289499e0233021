"""The broker's non-persistent topics: idle ones are forgotten after a while, others kept."""

from __future__ import annotations

from pulsar_broker.topics.non_persistent import registry
from pulsar_broker.topics.persistent_topic import Producer
from pulsar_common import naming


def name(local: str) -> naming.TopicName:
    return naming.TopicName.parse(f"non-persistent://public/default/{local}")


def test_a_topic_idle_for_two_sweeps_is_forgotten_and_a_used_one_kept():
    clock = [0.0]
    topics = registry.NonPersistentTopics(now_s=lambda: clock[0])
    idle = topics.create(name("idle"))
    used = topics.create(name("used"))
    used.producers[0] = Producer(0, "p", "addr")
    clock[0] += registry.INACTIVE_AFTER_S
    topics.create(name("other"))  # first sweep: "idle" is found idle
    assert topics.get(name("idle")) is idle
    clock[0] += registry.INACTIVE_AFTER_S
    topics.create(name("another"))  # second sweep: still idle, forgotten
    assert topics.get(name("idle")) is None and idle.closed
    assert topics.get(name("used")) is used


def test_no_sweep_before_the_interval():
    clock = [0.0]
    topics = registry.NonPersistentTopics(now_s=lambda: clock[0])
    topics.create(name("a"))
    for _ in range(3):
        clock[0] += registry.INACTIVE_AFTER_S / 4
        topics.create(name("b"))
    assert topics.get(name("a")) is not None
