"""The shared clock, the named retry delays and the retriable test (pure: no sleeping, no real time)."""

from __future__ import annotations

import random

import pytest
from pulsar_common import backoff, clock, errors
from pulsar_common.metadata import errors as metadata_errors


def test_manual_clock_moves_only_when_advanced() -> None:
    manual = clock.ManualClock(start_ms=1_000)
    assert manual() == 1_000
    manual.advance(ms=5, seconds=1.5, minutes=1)
    assert manual() == 1_000 + 5 + 1_500 + 60_000


def test_wall_clock_is_milliseconds_since_the_epoch() -> None:
    assert clock.wall_clock_ms() > 1_600_000_000_000


@pytest.mark.parametrize(("policy", "expected"), [
    (backoff.BackoffPolicy(first_s=0.05, max_s=1.0), [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]),
    (backoff.BackoffPolicy(first_s=0.05, max_s=0.2, multiplier=1.0, step_s=0.05),
     [0.05, 0.1, 0.15, 0.2, 0.2]),
    (backoff.BackoffPolicy(first_s=1.0, max_s=1.0), [1.0, 1.0, 1.0]),
    (backoff.BackoffPolicy(first_s=0.01, max_s=0.05, multiplier=3.0), [0.01, 0.03, 0.05, 0.05]),
])
def test_delays_grow_by_the_policy_up_to_its_cap(
        policy: backoff.BackoffPolicy, expected: list[float]) -> None:
    delays = policy.start()
    assert [delays.next_delay() for _ in expected] == pytest.approx(expected)
    assert delays.attempts == len(expected)


def test_reset_starts_again_from_the_first_delay() -> None:
    delays = backoff.BackoffPolicy(first_s=0.1, max_s=10).start()
    for _ in range(4):
        delays.next_delay()
    delays.reset()
    assert delays.attempts == 0
    assert delays.next_delay() == pytest.approx(0.1)
    assert delays.next_delay() == pytest.approx(0.2)


def test_jitter_takes_at_most_its_fraction_off_and_is_seeded() -> None:
    policy = backoff.BackoffPolicy(first_s=1.0, max_s=1.0, jitter=0.25)
    first = [policy.start(random.Random(7)).next_delay() for _ in range(3)]
    assert len(set(first)) == 1  # the same seed gives the same delays
    delays = policy.start(random.Random(1))
    for _ in range(200):
        assert 0.75 <= delays.next_delay() <= 1.0


def test_each_loop_gets_its_own_sequence() -> None:
    policy = backoff.BackoffPolicy(first_s=0.1, max_s=1.0)
    one, two = policy.start(), policy.start()
    one.next_delay()
    one.next_delay()
    assert two.next_delay() == pytest.approx(0.1)


@pytest.mark.parametrize("fields", [
    {"first_s": -1, "max_s": 1},
    {"first_s": 2, "max_s": 1},
    {"first_s": 0.1, "max_s": 1, "multiplier": 0.5},
    {"first_s": 0.1, "max_s": 1, "step_s": -0.1},
    {"first_s": 0.1, "max_s": 1, "jitter": 1.5},
])
def test_a_policy_whose_delays_would_shrink_or_go_negative_is_refused(
        fields: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        backoff.BackoffPolicy(**fields)


@pytest.mark.parametrize(("exc", "expected"), [
    (errors.PulsarError("refused"), False),
    (metadata_errors.StoreUnavailableError("etcd down"), True),
    (metadata_errors.NotFoundError("/x"), False),
    (TimeoutError(), True),
    (ConnectionResetError(), True),
    (ValueError("bad"), False),
])
def test_retriable_is_the_flag_of_our_errors_and_the_nature_of_timeouts(
        exc: BaseException, expected: bool) -> None:
    assert errors.is_retriable(exc) is expected
