"""Pure planning: ledger segments from layouts, offsets, splitting, pruning, publish-time search."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pulsar_spark import errors, options, planning, pushdown

P = planning.TopicPartition("persistent://public/default/t", -1)


def _layout(ledgers: list[tuple[int, int]], lac: tuple[int, int]) -> planning.Layout:
    return planning.Layout(P, tuple(planning.LedgerInfo(i, n) for i, n in ledgers),
                           options.Position(*lac))


def _ranges(segments: list[planning.Segment]) -> list[tuple[int, int, int]]:
    return [(s.ledger_id, s.first_entry_id, s.last_entry_id) for s in segments]


def test_open_ledger_is_readable_up_to_the_last_confirmed_entry():
    layout = _layout([(3, 10), (7, 0)], (7, 4))  # ledger 7 is open; internalStats says 0 entries
    assert _ranges(planning.readable_ranges(layout)) == [(3, 0, 9), (7, 0, 4)]


def test_a_ledger_after_the_last_confirmed_entry_has_nothing_readable():
    layout = _layout([(3, 10), (7, 0)], (3, 9))
    assert _ranges(planning.readable_ranges(layout)) == [(3, 0, 9)]


def test_offsets_clip_inclusive_start_and_exclusive_end():
    layout = _layout([(3, 10), (7, 6)], (7, 5))
    start = {P.name: options.Position(3, 4)}
    end = {P.name: options.Position(7, 2)}
    assert _ranges(planning.bounded(layout, start, end, True)) == [(3, 4, 9), (7, 0, 1)]
    assert planning.bounded(layout, "latest", "latest", True) == []


def test_start_before_the_oldest_ledger_is_data_loss():
    layout = _layout([(3, 10)], (3, 9))
    with pytest.raises(errors.DataLossError, match="failOnDataLoss=false"):
        planning.bounded(layout, {P.name: options.Position(1, 0)}, "latest", True)
    assert _ranges(planning.bounded(layout, {P.name: options.Position(1, 0)}, "latest", False)) \
        == [(3, 0, 9)]


def test_split_cuts_long_segments():
    segment = planning.Segment(P, 3, 0, 9)
    assert _ranges(planning.split([segment], 4)) == [(3, 0, 3), (3, 4, 7), (3, 8, 9)]


@given(st.lists(st.integers(1, 40), min_size=1, max_size=5), st.integers(1, 60),
       st.integers(1, 12))
def test_split_makes_at_least_min_partitions_when_there_are_enough_entries(
        lengths, per_partition, min_partitions):
    segments = [planning.Segment(P, ledger, 0, length - 1)
                for ledger, length in enumerate(lengths)]
    pieces = planning.split(segments, per_partition, min_partitions)
    assert len(pieces) >= min(min_partitions, sum(lengths))
    assert all(p.last_entry_id - p.first_entry_id + 1 <= per_partition for p in pieces)
    covered = [(p.ledger_id, e) for p in pieces for e in range(p.first_entry_id,
                                                                p.last_entry_id + 1)]
    assert covered == [(s.ledger_id, e) for s in segments
                       for e in range(s.first_entry_id, s.last_entry_id + 1)]


def test_partition_conditions_prune():
    indices = [0, 1, 2, 3]
    assert pushdown.allowed_partitions([("__partition", "=", 2)], indices) == {2}
    assert pushdown.allowed_partitions([("__partition", ">=", 1), ("__partition", "<", 3)],
                                       indices) == {1, 2}
    assert pushdown.allowed_partitions([("__partition", "in", (0, 3))], indices) == {0, 3}
    assert pushdown.allowed_partitions([("value", "=", 1)], indices) is None


def test_publish_time_conditions_intersect():
    bounds = pushdown.publish_time_range([("__publish_time", ">=", 100),
                                          ("__publish_time", "<", 200),
                                          ("__publish_time", ">", 150)])
    assert bounds == pushdown.TimeRange(150, 200)
    assert bounds.padded(10) == pushdown.TimeRange(140, 210)


@given(st.lists(st.integers(0, 50), min_size=1, max_size=40).map(sorted),
       st.integers(-5, 60), st.integers(-5, 60))
def test_narrowing_keeps_exactly_the_entries_in_range_when_times_are_ordered(times, low, high):
    probe = times.__getitem__
    found = pushdown.narrow(probe, 0, len(times) - 1, pushdown.TimeRange(low, high))
    expected = [i for i, t in enumerate(times) if low <= t <= high]
    if not expected:
        assert found is None
    else:
        assert found == (expected[0], expected[-1])


def test_options_are_checked():
    opts = options.parse_read_options({"admin.url": "http://h:8080/", "topic": "a,tenant/ns/b",
                                       "startingOffsets": '{"a": "3:4"}'})
    assert opts.admin_url == "http://h:8080"
    assert opts.topics == ("persistent://public/default/a", "persistent://tenant/ns/b")
    assert opts.starting == {"persistent://public/default/a": options.Position(3, 4)}
    with pytest.raises(errors.OptionError, match="exactly one"):
        options.parse_read_options({"admin.url": "x", "topic": "a", "topicsPattern": "b.*"})
    with pytest.raises(errors.OptionError, match="non-persistent"):
        options.full_topic_name("non-persistent://public/default/a")
    with pytest.raises(errors.OptionError, match="entriesPerPartition|entriesperpartition"):
        options.parse_read_options({"admin.url": "x", "topic": "a", "entriesPerPartition": "0"})
    with pytest.raises(errors.OptionError, match="minpartitions"):
        options.parse_read_options({"admin.url": "x", "topic": "a", "minPartitions": "-2"})
