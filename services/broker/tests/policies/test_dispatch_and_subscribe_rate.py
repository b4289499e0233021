"""The dispatch and subscribe rate limiters, driven with simulated time."""

from __future__ import annotations

import pytest
from pulsar_broker.subscriptions.dispatch_rate import (
    RETRY_MIN_S,
    DispatchRate,
    DispatchRateLimiter,
    DispatchThrottle,
    Quota,
    RateSlot,
    broker_rate,
)
from pulsar_broker.topics.publish_rate import PublishMeter
from pulsar_broker.topics.subscribe_rate import SubscribeRate, SubscribeRateLimiter


def drain(throttle: DispatchThrottle, seconds: float, entry_messages: int = 1,
          entry_bytes: int = 100, read_max: int = 100) -> tuple[int, int]:
    """A dispatcher with an endless backlog: reads what the quota allows, waits when it is
    throttled; answers the messages and bytes it sent in `seconds`."""
    now, messages, volume = 0.0, 0, 0
    while now < seconds:
        quota = throttle.quota(now)
        if quota is not None and quota.throttled:
            now += throttle.wait_s(now)
            continue
        allowed, size = (read_max, 10**9) if quota is None else quota.fit(read_max, 10**9)
        for _ in range(max(1, min(allowed // entry_messages, size // entry_bytes))):
            throttle.record(entry_messages, entry_bytes, now)
            messages += entry_messages
            volume += entry_bytes
        now += 0.001
    return messages, volume


def fixed(rate: DispatchRate) -> RateSlot:
    return RateSlot(lambda _now_s: rate)


@pytest.mark.parametrize("period_s", [1, 5])
def test_a_message_rate_is_kept_over_a_run(period_s: int) -> None:
    rate = DispatchRate(messages=200 * period_s, period_s=period_s)
    messages, _ = drain(DispatchThrottle([fixed(rate)]), seconds=20.0)
    # One period's worth at the start (the bucket starts full), then the rate.
    assert 200 * 20 <= messages <= 200 * (20 + period_s) + 100


def test_batches_count_their_messages() -> None:
    messages, _ = drain(DispatchThrottle([fixed(DispatchRate(messages=100))]), 10.0,
                        entry_messages=10)
    assert 100 * 10 <= messages <= 100 * 11 + 10


def test_a_byte_rate_is_kept() -> None:
    _, volume = drain(DispatchThrottle([fixed(DispatchRate(bytes=10_000))]), 10.0,
                      entry_bytes=500)
    assert 10_000 * 10 <= volume <= 10_000 * 11 + 500


def test_the_tightest_limiter_wins() -> None:
    topic = fixed(DispatchRate(messages=1000))
    subscription = fixed(DispatchRate(messages=50))
    messages, _ = drain(DispatchThrottle([topic, subscription]), 10.0)
    assert messages <= 50 * 11 + 1


def test_subscriptions_share_their_topics_limiter() -> None:
    topic = fixed(DispatchRate(messages=100))
    first, second = DispatchThrottle([topic]), DispatchThrottle([topic])
    now, sent = 0.0, 0
    while now < 10.0:
        for throttle in (first, second):
            quota = throttle.quota(now)
            assert quota is not None
            if not quota.throttled:
                throttle.record(1, 10, now)
                sent += 1
        now += 0.001
    assert 100 * 10 <= sent <= 100 * 11 + 2


def test_the_brokers_limiter_binds_the_subscriptions_of_every_topic_together() -> None:
    """dispatchThrottlingRateInMsg: one slot in every throttle, whatever the topic; each
    topic's own (looser) rate leaves the broker's the tightest."""
    settings = {"messages": 0}
    broker = RateSlot(lambda _now_s: broker_rate(settings["messages"], 0))
    throttles = [DispatchThrottle([broker, fixed(DispatchRate(messages=1000))])
                 for _topic in range(3)]
    assert all(throttle.quota(0.0) is not None for throttle in throttles)  # the topics' own
    settings["messages"] = 150  # a dynamic change: read at the next quota
    now, sent = 0.0, 0
    while now < 10.0:
        for throttle in throttles:
            quota = throttle.quota(now)
            assert quota is not None
            if not quota.throttled:
                throttle.record(1, 10, now)
                sent += 1
        now += 0.001
    assert 150 * 10 <= sent <= 150 * 11 + 3
    settings["messages"] = 0
    assert all(throttle.quota(now) is not None and not throttle.quota(now).throttled
               for throttle in throttles)


def test_unlimited_has_no_quota() -> None:
    throttle = DispatchThrottle([fixed(DispatchRate()), fixed(DispatchRate(-1, 0))])
    assert throttle.quota(0.0) is None
    assert not throttle.active


def test_a_throttled_dispatcher_waits_until_a_token_is_back() -> None:
    limiter = DispatchRateLimiter(DispatchRate(messages=10), now_s=0.0)
    limiter.record(15, 0, now_s=0.0)  # five in debt
    assert limiter.quota(0.0).throttled
    assert limiter.wait_s(0.0) == pytest.approx(0.6)
    assert not limiter.quota(0.6).throttled
    throttle = DispatchThrottle([fixed(DispatchRate(messages=10_000))])
    throttle.quota(0.0)
    throttle.record(10_000, 0, 0.0)
    assert throttle.wait_s(0.0) == RETRY_MIN_S  # never a busy loop


def test_a_changed_rate_retunes_the_limiter_and_changed_dimensions_replace_it() -> None:
    current = [DispatchRate(messages=10)]
    slot = RateSlot(lambda _now_s: current[0])
    first = slot.limiter(0.0)
    assert first is not None and slot.limiter(1.0) is first
    first.record(10, 0, 1.0)  # empty
    current[0] = DispatchRate(messages=20)
    assert slot.limiter(1.0) is first and first.quota(1.0).messages == 0  # no free refill
    current[0] = DispatchRate(messages=20, bytes=1000)
    second = slot.limiter(2.0)
    assert second is not first and second is not None
    current[0] = DispatchRate()
    assert slot.limiter(3.0) is None


def test_a_relative_rate_adds_the_publish_rate() -> None:
    relative = DispatchRate(messages=100, bytes=-1, period_s=2, relative_to_publish_rate=True)
    assert relative.plus_publish_rate(50.0, 999.0) == DispatchRate(
        messages=200, bytes=-1, period_s=2, relative_to_publish_rate=True)
    assert DispatchRate(messages=100).plus_publish_rate(50.0, 0.0) == DispatchRate(messages=100)


def test_the_publish_meter_averages_over_a_window() -> None:
    meter = PublishMeter()
    assert meter.update(0, 0, now_s=0.0) == (0.0, 0.0)
    assert meter.update(500, 5000, now_s=0.5) == (0.0, 0.0)  # within the first window
    assert meter.update(1000, 10_000, now_s=1.0) == (1000.0, 10_000.0)
    assert meter.update(1000, 10_000, now_s=3.0) == (0.0, 0.0)


def test_a_quota_cuts_a_read_down_but_never_to_nothing() -> None:
    assert Quota(5, None).fit(100, 5_000_000) == (5, 5_000_000)
    assert Quota(None, 300).fit(100, 5_000_000) == (100, 300)
    assert Quota(1, 1).fit(100, 100) == (1, 1)


def test_each_consumer_gets_its_subscribes_per_period() -> None:
    limiter = SubscribeRateLimiter(SubscribeRate(subscribes=2, period_s=30), now_s=0.0)
    alice, bob = ("10.0.0.1", "alice", 0), ("10.0.0.1", "bob", 0)
    assert limiter.try_acquire(alice, 1.0) and limiter.try_acquire(alice, 2.0)
    assert not limiter.try_acquire(alice, 3.0)
    assert limiter.try_acquire(bob, 4.0)  # its own count
    assert limiter.try_acquire(("10.0.0.1", "alice", 1), 5.0)  # another consumer id
    assert limiter.try_acquire(alice, 30.0)  # a new period


def test_unlimited_subscribe_rate() -> None:
    assert not SubscribeRate().limited and not SubscribeRate(0, 30).limited
