"""Delayed delivery with the official client: deliver_after / deliver_at on Shared and
Key_Shared subscriptions; Exclusive ignores it."""

from __future__ import annotations

import json
import time
import urllib.request
from datetime import timedelta

import pulsar
from pulsar_broker.testing import nothing_more, receive_all
from pulsar_common import clock

from .conftest import TICK_MS

SHARED = pulsar.ConsumerType.Shared
#: Slack for millisecond rounding between the client's clock and ours (same machine).
CLOCK_SLACK_MS = 20


#: The broker's clock (the same one: the client stamps deliver-at times on this machine).
now_ms = clock.wall_clock_ms


def earliest_release_ms(deliver_at_ms: int) -> int:
    """The broker may hand a delayed message out up to one tick early."""
    return deliver_at_ms - TICK_MS - CLOCK_SLACK_MS


def test_shared_holds_a_delayed_message_while_later_ones_arrive_first(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
    producer = client.create_producer(topic)
    sent_at = now_ms()
    producer.send(b"late", deliver_after=timedelta(seconds=2))
    for i in range(3):
        producer.send(b"now-%d" % i)
    first = receive_all(consumer, 3)
    assert [m.data() for m in first] == [b"now-0", b"now-1", b"now-2"]
    late = consumer.receive(timeout_millis=20_000)
    assert late.data() == b"late"
    assert now_ms() >= earliest_release_ms(sent_at + 2000)
    consumer.acknowledge(late)
    assert nothing_more(consumer)


def test_deliver_at_an_absolute_time(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
    producer = client.create_producer(topic)
    deliver_at = now_ms() + 1500
    producer.send(b"at", deliver_at=deliver_at)
    producer.send(b"plain")
    assert consumer.receive(timeout_millis=10_000).data() == b"plain"
    msg = consumer.receive(timeout_millis=20_000)
    assert msg.data() == b"at"
    assert now_ms() >= earliest_release_ms(deliver_at)


def test_key_shared_delays_too(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.KeyShared)
    producer = client.create_producer(topic)
    sent_at = now_ms()
    producer.send(b"late", partition_key="k1", deliver_after=timedelta(seconds=1))
    producer.send(b"plain", partition_key="k2")
    assert consumer.receive(timeout_millis=10_000).data() == b"plain"
    msg = consumer.receive(timeout_millis=20_000)
    assert msg.data() == b"late"
    assert now_ms() >= earliest_release_ms(sent_at + 1000)


def test_exclusive_ignores_the_delay(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer(topic)
    producer.send(b"late", deliver_after=timedelta(hours=1))
    producer.send(b"plain")
    assert [m.data() for m in receive_all(consumer, 2)] == [b"late", b"plain"]


def test_several_delayed_messages_come_out_in_time_order(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
    producer = client.create_producer(topic)
    base = now_ms() + 1000
    order = [3, 1, 2, 0]
    for step in order:
        producer.send(b"m%d" % step, deliver_at=base + step * 300)
    got = []
    for _ in order:
        msg = consumer.receive(timeout_millis=20_000)
        got.append(msg.data())
        step = int(msg.data()[1:])
        assert now_ms() >= earliest_release_ms(base + step * 300)
        consumer.acknowledge(msg)
    assert got == [b"m0", b"m1", b"m2", b"m3"]


def test_a_delayed_message_nacked_after_delivery_comes_back(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=SHARED,
                                negative_ack_redelivery_delay_ms=100)
    producer = client.create_producer(topic)
    producer.send(b"late", deliver_after=timedelta(milliseconds=500))
    first = consumer.receive(timeout_millis=20_000)
    consumer.negative_acknowledge(first)
    again = consumer.receive(timeout_millis=20_000)
    assert again.data() == b"late"
    assert again.redelivery_count() >= 1
    consumer.acknowledge(again)
    assert nothing_more(consumer)


def test_a_consumer_closing_before_the_time_does_not_lose_it(client, topic):
    leaving = client.subscribe(topic, "sub", consumer_type=SHARED)
    producer = client.create_producer(topic)
    producer.send(b"late", deliver_after=timedelta(seconds=1))
    leaving.close()
    staying = client.subscribe(topic, "sub", consumer_type=SHARED)
    msg = staying.receive(timeout_millis=20_000)
    assert msg.data() == b"late"
    staying.acknowledge(msg)
    assert nothing_more(staying)


def _subscription_stats(web_url: str, topic: str, sub: str) -> dict:
    path = topic.removeprefix("persistent://")
    with urllib.request.urlopen(f"{web_url}/admin/v2/persistent/{path}/stats", timeout=10) as r:
        return json.load(r)["subscriptions"][sub]


def test_stats_count_held_messages_in_the_backlog(client, topic, standalone):
    consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
    producer = client.create_producer(topic)
    producer.send(b"late-1", deliver_after=timedelta(seconds=30))
    producer.send(b"late-2", deliver_after=timedelta(seconds=30))
    producer.send(b"plain")
    consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    deadline = time.monotonic() + 20
    stats = _subscription_stats(standalone.web_url, topic, "sub")
    while stats["msgDelayed"] != 2 or stats["msgBacklog"] != 2:
        assert time.monotonic() < deadline, stats
        time.sleep(0.05)
        stats = _subscription_stats(standalone.web_url, topic, "sub")
    assert stats["msgBacklogNoDelayed"] == 0


def test_a_batching_producer_sends_delayed_messages_apart(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=50)
    sent_at = now_ms()
    producer.send_async(b"late", None, deliver_after=timedelta(seconds=1))
    producer.send_async(b"plain-0", None)
    producer.send_async(b"plain-1", None)
    producer.flush()
    assert [m.data() for m in receive_all(consumer, 2)] == [b"plain-0", b"plain-1"]
    late = consumer.receive(timeout_millis=20_000)
    assert late.data() == b"late"
    assert now_ms() >= earliest_release_ms(sent_at + 1000)
