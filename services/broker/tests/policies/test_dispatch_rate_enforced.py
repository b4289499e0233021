"""Dispatch rates of the broker, a namespace and a topic, measured on the official client (a
backlog drained under a limit arrives at that rate), and the subscribe rate per consumer."""

from __future__ import annotations

import threading
import time

import pulsar
import pytest

#: Messages in each backlog: more than a limited consumer can drain in the measured window.
BACKLOG = 2500


def fill(client: pulsar.Client, topic: str, count: int = BACKLOG) -> None:
    producer = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
    for _ in range(count):
        producer.send_async(b"x" * 10, None)
    producer.flush()
    producer.close()


def receive_times(consumer: pulsar.Consumer, seconds: float) -> list[float]:
    """When each message arrived, for `seconds` from now (acknowledged as they come)."""
    arrived: list[float] = []
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        try:
            message = consumer.receive(timeout_millis=200)
        except pulsar.Timeout:
            continue
        arrived.append(time.monotonic())
        consumer.acknowledge(message)
    return arrived


def steady_rate(arrived: list[float], started: float) -> float:
    """Messages per second between 1 s and 5 s after the start: past the first period's
    burst (a bucket starts full), before the end."""
    return len([t for t in arrived if started + 1.0 <= t < started + 5.0]) / 4.0


def test_a_subscription_under_a_namespace_dispatch_rate_gets_that_rate(client, admin,
                                                                       namespace):
    topic = f"persistent://{namespace}/dispatch"
    admin.create_subscription(topic, "limited")  # creates the topic; the backlog follows
    fill(client, topic)
    admin.set_policy(namespace, "dispatchRate", {"dispatchThrottlingRateInMsg": 200,
                                                 "dispatchThrottlingRateInByte": -1,
                                                 "ratePeriodInSecond": 1})
    consumer = client.subscribe(topic, "limited", receiver_queue_size=1000)
    started = time.monotonic()
    rate = steady_rate(receive_times(consumer, 5.5), started)
    assert 180 <= rate <= 220, rate
    consumer.close()


def test_a_topic_dispatch_rate_is_shared_and_a_subscription_rate_is_each_ones(client, admin,
                                                                              namespace):
    """dispatchRate limits the topic, whatever its subscriptions; subscriptionDispatchRate
    gives every subscription the whole rate."""
    shared_topic = f"persistent://{namespace}/shared"
    own_topic = f"persistent://{namespace}/own"
    for topic in (shared_topic, own_topic):
        for subscription in ("a", "b"):
            admin.create_subscription(topic, subscription)
        fill(client, topic)
    limit = {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1,
             "ratePeriodInSecond": 1}
    admin.ok("POST", f"/admin/v2/persistent/{namespace}/shared/dispatchRate", limit)
    admin.ok("POST", f"/admin/v2/persistent/{namespace}/own/subscriptionDispatchRate", limit)
    consumers = {(topic, name): client.subscribe(topic, name, receiver_queue_size=1000)
                 for topic in (shared_topic, own_topic) for name in ("a", "b")}
    started = time.monotonic()
    arrivals: dict[tuple[str, str], list[float]] = {}

    def drain(key: tuple[str, str]) -> None:
        arrivals[key] = receive_times(consumers[key], 5.5)

    threads = [threading.Thread(target=drain, args=(key,)) for key in consumers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    shared = sum(steady_rate(arrivals[(shared_topic, n)], started) for n in ("a", "b"))
    assert 90 <= shared <= 110, shared
    for name in ("a", "b"):
        own = steady_rate(arrivals[(own_topic, name)], started)
        assert 90 <= own <= 110, (name, own)
    for consumer in consumers.values():
        consumer.close()


def drain_together(consumers: list[pulsar.Consumer], seconds: float) -> list[list[float]]:
    """receive_times of every consumer, all draining at the same time."""
    arrivals: list[list[float]] = [[] for _ in consumers]

    def drain(index: int) -> None:
        arrivals[index] = receive_times(consumers[index], seconds)

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(len(consumers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return arrivals


def test_the_broker_dispatch_rate_holds_over_all_topics_together(client, admin, namespace):
    """dispatchThrottlingRateInMsg, set as a dynamic setting: two topics drained at once
    share the broker's rate; deleting the setting lifts it."""
    topics = [f"persistent://{namespace}/broker-wide-{i}" for i in range(2)]
    for topic in topics:
        admin.create_subscription(topic, "sub")
        fill(client, topic)
    setting = "/admin/v2/brokers/configuration/dispatchThrottlingRateInMsg"
    admin.ok("POST", f"{setting}/200")
    try:
        consumers = [client.subscribe(topic, "sub", receiver_queue_size=1000)
                     for topic in topics]
        started = time.monotonic()
        shares = [steady_rate(arrived, started) for arrived in drain_together(consumers, 5.5)]
        assert 180 <= sum(shares) <= 220, shares
        # Both topics got a share: neither starved the other.
        assert all(share >= 40 for share in shares), shares
    finally:
        admin.ok("DELETE", setting)
    drained = drain_together(consumers, 3.0)
    assert sum(len(arrived) for arrived in drained) > 1500
    for consumer in consumers:
        consumer.close()


def test_removing_the_dispatch_rate_lifts_the_limit(client, admin, namespace):
    topic = f"persistent://{namespace}/lifted"
    admin.create_subscription(topic, "sub")
    fill(client, topic, 1000)
    admin.set_policy(namespace, "dispatchRate", {"dispatchThrottlingRateInMsg": 10,
                                                 "ratePeriodInSecond": 1})
    consumer = client.subscribe(topic, "sub", receiver_queue_size=1000)
    assert len(receive_times(consumer, 1.5)) <= 30
    admin.ok("DELETE", f"/admin/v2/namespaces/{namespace}/dispatchRate")
    assert len(receive_times(consumer, 3.0)) > 900
    consumer.close()


def test_a_consumer_past_its_subscribe_rate_is_refused(standalone, admin, namespace):
    """subscribeRate counts subscribes per consumer: its client's host, name and id. Two
    fresh clients give their first consumer the same id, so they are the same consumer."""
    topic = f"persistent://{namespace}/subscribes"
    admin.set_policy(namespace, "subscribeRate", {"subscribeThrottlingRatePerConsumer": 1,
                                                  "ratePeriodInSecond": 30})
    first = pulsar.Client(standalone.service_url)
    first.subscribe(topic, "sub", consumer_name="same").close()
    first.close()
    second = pulsar.Client(standalone.service_url)
    try:
        with pytest.raises(pulsar.NotAllowedError):
            second.subscribe(topic, "sub", consumer_name="same")
        # Another name is another consumer.
        second.subscribe(topic, "sub", consumer_name="other").close()
    finally:
        second.close()
    admin.ok("DELETE", f"/admin/v2/namespaces/{namespace}/subscribeRate")
    third = pulsar.Client(standalone.service_url)
    third.subscribe(topic, "sub", consumer_name="same").close()
    third.close()
