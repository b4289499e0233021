"""The load sampler: per-bundle rates and counts from the loaded topics' counters."""

from __future__ import annotations

import types
from typing import Any, cast

import pytest
from pulsar_broker.loadbalance import placement, report
from pulsar_broker.namespace import bundles
from pulsar_broker.service.broker_service import BrokerService
from pulsar_common import naming

NS = naming.NamespaceName("public", "lb")
LOW = bundles.NamespaceBundle(NS, 0, 0x80000000)
HIGH = bundles.NamespaceBundle(NS, 0x80000000, 0xFFFFFFFF, closed=True)


def topic_in(bundle: bundles.NamespaceBundle, prefix: str) -> naming.TopicName:
    for i in range(1000):
        name = naming.TopicName.parse(f"persistent://public/lb/{prefix}-{i}")
        if bundle.holds(bundles.topic_hash(name)):
            return name
    raise AssertionError("no name found")


def fake_topic(name: naming.TopicName, consumers: int) -> Any:
    subscription = types.SimpleNamespace(consumers=[
        types.SimpleNamespace(msg_out=0, bytes_out=0) for _ in range(consumers)])
    return types.SimpleNamespace(name=name, msg_in=0, bytes_in=0, producers={1: object()},
                                 subscriptions={"s": subscription})


def fake_service(owned: list[bundles.NamespaceBundle], topics: list[Any]) -> BrokerService:
    config = types.SimpleNamespace(load_balancer_override_broker_nic_speed_gbps=0.008)
    service = types.SimpleNamespace(
        config=config, broker_id="b1:8080", web_service_url="http://b1:8080",
        broker_service_url="pulsar://b1:6650", loaded_topics=topics,
        namespaces=types.SimpleNamespace(ownership=types.SimpleNamespace(owned_bundles=owned)))
    return cast(BrokerService, service)


def test_rates_are_the_counters_change_between_two_samples_per_owned_bundle() -> None:
    busy, quiet = fake_topic(topic_in(LOW, "busy"), consumers=2), fake_topic(
        topic_in(LOW, "quiet"), consumers=0)
    sampler = report.LoadSampler(fake_service([LOW, HIGH], [busy, quiet]))
    first = sampler.sample(10_000)
    assert first.bundles[str(LOW)].msg_rate_in == 0.0
    busy.msg_in, busy.bytes_in = 200, 200 * 1024
    for consumer in busy.subscriptions["s"].consumers:
        consumer.msg_out, consumer.bytes_out = 100, 100 * 1024
    second = sampler.sample(12_000)
    low = second.bundles[str(LOW)]
    assert (low.msg_rate_in, low.msg_rate_out) == (100.0, 100.0)
    assert (low.msg_throughput_in, low.msg_throughput_out) == (100 * 1024, 100 * 1024)
    assert (low.topics, low.producer_count, low.consumer_count) == (2, 2, 2)
    assert second.bundles[str(HIGH)] == type(low)()  # owned, no topics: all zero
    assert second.bandwidth_in.usage == pytest.approx(100.0)  # KB/s
    assert second.bandwidth_in.limit == pytest.approx(0.008e9 / 8 / 1024)
    assert second.memory.usage > 0 and second.cpu.limit >= 100


def test_topics_of_bundles_the_broker_does_not_own_are_left_out() -> None:
    stray = fake_topic(topic_in(HIGH, "stray"), consumers=1)
    sampler = report.LoadSampler(fake_service([LOW], [stray]))
    sampled = sampler.sample(1_000)
    assert list(sampled.bundles) == [str(LOW)]
    assert sampled.bundles[str(LOW)].topics == 0


def test_a_departed_consumer_does_not_make_the_out_rate_negative() -> None:
    topic = fake_topic(topic_in(LOW, "t"), consumers=1)
    sampler = report.LoadSampler(fake_service([LOW], [topic]))
    topic.subscriptions["s"].consumers[0].msg_out = 50
    sampler.sample(1_000)
    topic.subscriptions["s"].consumers = []
    assert sampler.sample(2_000).bundles[str(LOW)].msg_rate_out == 0.0


def test_a_split_places_each_topic_in_the_half_that_holds_it_and_an_unload_drops_it() -> None:
    whole = bundles.NamespaceBundle(NS, 0, 0xFFFFFFFF, closed=True)
    low, high = fake_topic(topic_in(LOW, "low"), 1), fake_topic(topic_in(HIGH, "high"), 1)
    service = fake_service([whole], [low, high])
    sampler = report.LoadSampler(service)
    assert sampler.sample(1_000).bundles[str(whole)].topics == 2
    assert sampler.sample(2_000).bundles[str(whole)].topics == 2  # placed once, still right
    service.namespaces.ownership.owned_bundles = [LOW, HIGH]  # the split
    split = sampler.sample(3_000).bundles
    assert list(split) == [str(LOW), str(HIGH)]
    assert (split[str(LOW)].topics, split[str(HIGH)].topics) == (1, 1)
    service.namespaces.ownership.owned_bundles = [LOW]  # HIGH unloaded (its topic not yet)
    assert sampler.sample(4_000).bundles == {str(LOW): split[str(LOW)]}


def test_an_unloaded_topic_is_forgotten_and_one_loaded_later_is_placed() -> None:
    first, second = fake_topic(topic_in(LOW, "a"), 0), fake_topic(topic_in(HIGH, "b"), 0)
    service = fake_service([LOW, HIGH], [first])
    sampler = report.LoadSampler(service)
    sampler.sample(1_000)
    service.loaded_topics = [second]
    sampled = sampler.sample(2_000).bundles
    assert (sampled[str(LOW)].topics, sampled[str(HIGH)].topics) == (0, 1)
    assert len(sampler._placement) == 1  # the unloaded topic left nothing behind


def test_placement_finds_what_a_search_of_every_owned_bundle_finds() -> None:
    other = naming.NamespaceName("public", "other")
    owned = [LOW, HIGH, bundles.NamespaceBundle(other, 0, 0xFFFFFFFF, closed=True)]
    topics = [fake_topic(naming.TopicName.parse(f"persistent://public/{ns}/t-{i}"), 0)
              for ns in ("lb", "other", "unowned") for i in range(50)]
    placed = placement.TopicPlacement()
    placed.update(owned)
    for topic in topics:
        searched = next((str(b) for b in owned if b.namespace == topic.name.namespace_name
                         and b.holds(bundles.topic_hash(topic.name))), None)
        assert placed.place(topic) == (str(topic.name), searched)
