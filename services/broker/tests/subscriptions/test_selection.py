"""Failover's active consumer and Key_Shared's hash ranges."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from pulsar_broker.subscriptions import selection


@dataclass(frozen=True)
class C:
    consumer_name: str
    priority_level: int = 0


def test_failover_picks_highest_priority_then_name():
    consumers = [C("b"), C("a", 1), C("c")]
    assert selection.failover_active(consumers, -1) == C("b")


def test_failover_spreads_partitions_over_top_priority_consumers():
    consumers = [C("x"), C("y")]
    assert [selection.failover_active(consumers, i).consumer_name for i in range(4)] == [
        "x", "y", "x", "y"]


def test_failover_without_consumers_has_no_active():
    assert selection.failover_active([], 0) is None


def test_murmur3_matches_reference_vectors():
    # Published MurmurHash3_x86_32 test vectors.
    assert selection.murmur3_32(b"") == 0
    assert selection.murmur3_32(b"", 1) == 0x514E28B7
    assert selection.murmur3_32(b"hello") == 0x248BFA47
    assert selection.murmur3_32(b"Hello, world!", 1234) == 0xFAF6CDB3


def test_auto_split_halves_the_largest_range():
    ranges = selection.AutoSplitRanges[str].empty()
    ranges.add("a")
    ranges.add("b")
    assert ranges.ranges() == [(0, 32767, "a"), (32768, 65535, "b")]
    ranges.add("c")
    assert ranges.ranges() == [(0, 16383, "a"), (16384, 32767, "c"), (32768, 65535, "b")]


def test_removed_consumer_range_goes_to_a_neighbour():
    ranges = selection.AutoSplitRanges[str].empty()
    for name in "abc":
        ranges.add(name)
    ranges.remove("c")
    assert ranges.ranges() == [(0, 16383, "a"), (16384, 65535, "b")]
    ranges.remove("b")
    assert ranges.ranges() == [(0, 65535, "a")]


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 7)), max_size=40),
       st.integers(0, selection.HASH_RANGE_SIZE - 1))
def test_ranges_always_cover_the_space_with_present_consumers(ops, key_hash):
    ranges = selection.AutoSplitRanges[int].empty()
    present: set[int] = set()
    for add, who in ops:
        if add and who not in present:
            ranges.add(who)
            present.add(who)
        elif not add and who in present:
            ranges.remove(who)
            present.discard(who)
    spans = ranges.ranges()
    if not present:
        assert spans == [] and ranges.owner(key_hash) is None
        return
    assert spans[0][0] == 0 and spans[-1][1] == selection.HASH_RANGE_SIZE - 1
    assert all(a[1] + 1 == b[0] for a, b in zip(spans, spans[1:]))
    assert {owner for _, _, owner in spans} == present
    assert ranges.owner(key_hash) in present


@given(st.lists(st.integers(0, 5), min_size=1, max_size=6, unique=True), st.binary(max_size=16))
def test_a_key_stays_with_its_consumer_when_others_leave(names, key):
    ranges = selection.AutoSplitRanges[int].empty()
    for n in names:
        ranges.add(n)
    owner = ranges.owner(selection.sticky_key_hash(key))
    for n in names:
        if n != owner:
            ranges.remove(n)
            assert ranges.owner(selection.sticky_key_hash(key)) == owner
