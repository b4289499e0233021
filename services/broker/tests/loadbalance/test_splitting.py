"""Bundle split decisions and split points."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulsar_broker.loadbalance import model, splitting
from pulsar_broker.loadbalance.settings import SplitSettings

MB = model.BYTES_PER_MB
LIMITS = SplitSettings(max_topics=10, max_sessions=20, max_msg_rate=1000, max_bandwidth_mb=5,
                       max_bundles_per_namespace=8, max_splits_per_round=3)


@pytest.mark.parametrize(("stats", "why"), [
    (model.BundleStats(topics=11), "11 topics > 10"),
    (model.BundleStats(topics=2, producer_count=15, consumer_count=6), "21 sessions > 20"),
    (model.BundleStats(topics=2, msg_rate_in=600, msg_rate_out=600), "1200 msg/s > 1000"),
    (model.BundleStats(topics=2, msg_throughput_out=6 * MB), "6.0 MB/s > 5"),
    (model.BundleStats(topics=10, producer_count=20, msg_rate_in=1000), None),
    (model.BundleStats(topics=1, msg_rate_in=10**6), None),
])
def test_a_bundle_over_any_limit_with_two_topics_or_more_is_split(stats, why) -> None:
    assert splitting.over_limits(stats, LIMITS) == why


def test_zero_disables_a_limit() -> None:
    assert splitting.over_limits(model.BundleStats(topics=50), SplitSettings(max_topics=0)) is None


def hot(name: str) -> tuple[str, model.BundleStats]:
    return name, model.BundleStats(topics=20)


def test_splits_stop_at_the_namespace_maximum_and_the_per_round_cap() -> None:
    reports = [model.BrokerReport("a", bundles=dict(hot(f"t/ns/0x0000000{i}_0x0000000{i + 1}")
                                                    for i in range(5))),
               model.BrokerReport("b", bundles=dict([hot("t/other/0x00000000_0xffffffff")]))]
    splits = splitting.plan(reports, {"t/ns": 7, "t/other": 1}, LIMITS)
    assert [s.bundle for s in splits] == ["t/ns/0x00000000_0x00000001",
                                          "t/other/0x00000000_0xffffffff"]
    assert splits[1].owner == "b" and splits[1].algorithm == "range_equally_divide"
    many = splitting.plan(reports, {"t/ns": 1, "t/other": 1}, LIMITS)
    assert len(many) == LIMITS.max_splits_per_round


def test_range_equally_divide_cuts_in_the_middle() -> None:
    assert splitting.split_point("range_equally_divide", 0, 0xFFFFFFFF) == 0x7FFFFFFF
    assert splitting.split_point("range_equally_divide", 4, 5) is None


def test_topic_count_equally_divide_cuts_between_the_middle_topics() -> None:
    hashes = [10, 20, 900, 1000]
    point = splitting.split_point("topic_count_equally_divide", 0, 0x10000, hashes)
    assert point is not None and 20 < point <= 900
    assert splitting.split_point("topic_count_equally_divide", 0, 0x10000, [5]) is None


def test_an_unknown_algorithm_is_refused() -> None:
    with pytest.raises(ValueError):
        splitting.split_point("flow_or_qps_equally_divide", 0, 100)


@given(lower=st.integers(0, 2**31), width=st.integers(2, 2**31),
       hashes=st.lists(st.integers(0, 2**32 - 1), max_size=50))
def test_topic_count_halves_hold_as_many_topics_as_they_can(lower, width, hashes) -> None:
    upper = lower + width
    point = splitting.split_point("topic_count_equally_divide", lower, upper, hashes)
    inside = sorted({h for h in hashes if lower <= h <= upper})
    if point is None:
        assert len(inside) < 2 or not any(lower < h < upper for h in inside[1:])
        return
    assert lower < point < upper
    below = [h for h in inside if h < point]
    assert len(below) == len(inside) // 2


def test_split_settings_are_the_defaults_apache_documents() -> None:
    defaults = SplitSettings()
    assert dataclasses.astuple(defaults) == (1000, 1000, 30000.0, 100.0, 128, 10,
                                             "range_equally_divide")


def test_specified_positions_keep_those_strictly_inside_in_order() -> None:
    assert splitting.specified_positions(10, 100, [50, 10, 20, 100, 20, 5]) == [20, 50]
