"""The publish rate limiter, driven with simulated time: what a producer gets over a run."""

from __future__ import annotations

import pytest
from pulsar_broker.topics.publish_rate import PublishRate, PublishRateLimiter


def run(rate: PublishRate, batch: int, size: int, seconds: float) -> tuple[int, int]:
    """A producer that sends `batch` messages of `size` bytes whenever it may, for `seconds`."""
    limiter = PublishRateLimiter(rate, now_s=0.0)
    now, messages, volume = 0.0, 0, 0
    while now < seconds:
        pause = limiter.record(batch, batch * size, now)
        messages += batch
        volume += batch * size
        now += pause if pause > 0 else 0.0001
    return messages, volume


@pytest.mark.parametrize("batch", [1, 10, 500])
def test_a_message_rate_is_kept_whatever_the_batch_size(batch: int) -> None:
    messages, _ = run(PublishRate(messages_per_s=1000), batch, 100, seconds=20.0)
    # A tenth of a second's burst at the start, then the rate; a batch may overshoot once.
    assert 1000 * 20 <= messages <= 1000 * 20.1 + batch


def test_a_byte_rate_is_kept() -> None:
    _, volume = run(PublishRate(bytes_per_s=50_000), 10, 1000, seconds=10.0)
    assert 50_000 * 10 <= volume <= 50_000 * 10.1 + 10_000


def test_the_tighter_of_two_limits_wins() -> None:
    messages, volume = run(PublishRate(messages_per_s=1000, bytes_per_s=10_000), 1, 100, 10.0)
    assert messages <= 100 * 10.1 + 1 and volume <= 10_000 * 10.1 + 100


def test_unlimited_never_pauses() -> None:
    limiter = PublishRateLimiter(PublishRate(), now_s=0.0)
    assert not PublishRate().limited
    assert all(limiter.record(1000, 10**6, t / 10) == 0.0 for t in range(100))


def test_a_quiet_spell_allows_only_a_short_burst() -> None:
    limiter = PublishRateLimiter(PublishRate(messages_per_s=1000), now_s=0.0)
    passed = 0
    while limiter.record(1, 10, now_s=60.0) == 0.0:  # after a minute without sends
        passed += 1
    assert passed <= 100  # BURST_S worth, not a minute's
