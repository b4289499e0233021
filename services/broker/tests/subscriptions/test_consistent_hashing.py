"""The consistent-hashing ring of Key_Shared: ownership, stability and balance."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from pulsar_broker.subscriptions import consistent_hashing, selection


class Named:
    def __init__(self, name: str) -> None:
        self.name = name


def ring(*consumers: Named, points: int = 100) -> consistent_hashing.ConsistentHashingRing[Named]:
    result = consistent_hashing.ConsistentHashingRing(lambda c: c.name, points)
    for consumer in consumers:
        result.add(consumer)
    return result


def keys(count: int, seed: int = 7) -> list[int]:
    rng = random.Random(seed)
    return [selection.murmur3_32(rng.randbytes(8)) for _ in range(count)]


def test_an_empty_ring_has_no_owner() -> None:
    assert ring().owner(12345) is None


def test_a_key_goes_to_the_first_point_at_or_after_its_hash_wrapping_around() -> None:
    a = Named("a")
    only = ring(a, points=3)
    points = [value for value, _ in only.points()]
    assert only.owner(points[0]) is a
    assert only.owner(points[-1] + 1) is a  # past the last point: wraps to the first


def test_keys_spread_over_consumers_roughly_evenly() -> None:
    consumers = [Named(f"c{i}") for i in range(4)]
    shared = ring(*consumers)
    counts = {c.name: 0 for c in consumers}
    for key_hash in keys(20_000):
        owner = shared.owner(key_hash)
        assert owner is not None
        counts[owner.name] += 1
    assert min(counts.values()) > 20_000 / 4 * 0.6, counts


def test_a_joining_consumer_takes_keys_only_for_itself() -> None:
    a, b, c = Named("a"), Named("b"), Named("c")
    before = ring(a, b)
    after = ring(a, b, c)
    for key_hash in keys(5_000):
        old, new = before.owner(key_hash), after.owner(key_hash)
        assert new is c or new is old


@settings(max_examples=50, deadline=None)
@given(names=st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=6, unique=True),
       leaving=st.integers(min_value=0, max_value=5))
def test_removing_a_consumer_moves_only_its_keys_and_matches_a_fresh_ring(
        names: list[str], leaving: int) -> None:
    consumers = [Named(name) for name in names]
    gone = consumers[leaving % len(consumers)]
    stayed = [c for c in consumers if c is not gone]
    full = ring(*consumers, points=10)
    full.remove(gone)
    fresh = ring(*stayed, points=10)
    for key_hash in keys(300):
        owner = full.owner(key_hash)
        assert owner is not gone
        expected = fresh.owner(key_hash)
        assert (owner.name if owner else None) == (expected.name if expected else None)
