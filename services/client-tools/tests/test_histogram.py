"""The perf tool's bucketed histogram against exact percentiles, and the rate limiter's pacing."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from pulsar_client_tools.client import rate
from pulsar_client_tools.perf import histogram


def _exact(values: list[int], percentile: float) -> int:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(len(ordered) * percentile / 100)) - 1]


@given(
    st.lists(st.integers(min_value=0, max_value=10**9), min_size=1, max_size=300),
    st.sampled_from(histogram.PERCENTILES),
)
def test_percentiles_are_within_one_percent_of_the_exact_value(values, percentile):
    h = histogram.Histogram()
    for value in values:
        h.record(value)
    exact = _exact(values, percentile)
    assert abs(h.value_at(percentile) - exact) <= max(1, exact / 100)


def test_small_values_are_counted_exactly_and_max_is_kept():
    h = histogram.Histogram()
    for value in range(1, 101):
        h.record(value)
    summary = h.summary()
    assert summary.count == 100
    assert summary.percentile_ms(50.0) == 0.050
    assert summary.percentile_ms(99.0) == 0.099
    assert summary.max_ms == 0.100


def test_recorder_intervals_add_up_to_the_cumulative_histogram():
    recorder = histogram.Recorder()
    recorder.record(10)
    first = recorder.interval()
    recorder.record(20)
    recorder.record(30)
    second = recorder.interval()
    assert (first.count, second.count, recorder.cumulative.count) == (1, 2, 3)
    assert recorder.cumulative.max == 30


def test_rate_limiter_spaces_permits_and_caps_catch_up_to_one_second():
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    limiter = rate.RateLimiter(10, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        limiter.acquire()
    assert slept == [0.1, 0.1]
    now[0] += 100.0  # a long stall: at most one second's worth of permits goes out at once
    slept.clear()
    for _ in range(10):
        limiter.acquire()
    assert slept == []
    for _ in range(2):
        limiter.acquire()
    assert slept and sum(slept) <= 0.1 + 1e-9
