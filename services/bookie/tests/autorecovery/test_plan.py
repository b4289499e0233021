"""The pure autorecovery decisions: which ledgers to mark, which fragments to copy, where."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import plan
from pulsar_bookie.client import api
from pulsar_bookie.client.replicated import placement

B = types.BookieId
E = types.EntryId


def ledger(ledger_id: int, fragments: list[tuple[int, tuple[str, ...]]], *,
           last: int | None, quorums: tuple[int, int, int] = (3, 2, 2)) -> api.LedgerMetadata:
    size, wq, aq = quorums
    return api.LedgerMetadata(
        ledger_id=types.LedgerId(ledger_id), ensemble_size=size, write_quorum_size=wq,
        ack_quorum_size=aq,
        state=api.LedgerState.OPEN if last is None else api.LedgerState.CLOSED,
        last_entry_id=E(-1 if last is None else last), length=0,
        ensembles=tuple(api.Fragment(E(first), tuple(B(b) for b in bookies))
                        for first, bookies in fragments),
        ctime_ms=0, custom_metadata={}, password=b"")


def infos(*names: str, read_only: tuple[str, ...] = ()) -> list[placement.BookieInfo]:
    return [placement.BookieInfo(B(n), writable=n not in read_only) for n in names]


# ----- fragments -----


def test_fragment_ranges_end_where_the_next_starts_and_the_open_tail_has_no_end() -> None:
    metadata = ledger(1, [(0, ("a", "b", "c")), (10, ("a", "b", "d"))], last=None)
    ranges = plan.fragment_ranges(metadata)
    assert [(r.first, r.last, r.closed) for r in ranges] == [(0, 9, True), (10, None, False)]


def test_a_closed_ledger_ends_its_last_fragment_at_its_last_entry() -> None:
    metadata = ledger(1, [(0, ("a", "b", "c")), (10, ("a", "b", "d"))], last=14)
    assert [(r.first, r.last) for r in plan.fragment_ranges(metadata)] == [(0, 9), (10, 14)]


@pytest.mark.parametrize(("position", "expected"), [
    (0, [0, 2, 3, 5]),  # write sets of E=3 WQ=2: e -> {e%3, (e+1)%3}
    (1, [0, 1, 3, 4]),
    (2, [1, 2, 4, 5]),
])
def test_entries_at_a_position_follow_the_striping(position: int, expected: list[int]) -> None:
    fragment = plan.FragmentRange(0, E(0), E(5), (B("a"), B("b"), B("c")))
    assert list(plan.entries_at(position, fragment, 3, 2)) == expected


# ----- the auditor -----


AUDIT_TABLE = [
    # (registered, decommissioning, missing since, now, delay, force) -> marked ledgers
    pytest.param({"a", "b", "c", "d"}, set(), {}, 1000, 0, False, {}, id="nothing-lost"),
    pytest.param({"a", "b", "d"}, set(), {}, 1000, 0, False, {1: {"c"}, 2: {"c"}},
                 id="lost-no-delay"),
    pytest.param({"a", "b", "d"}, set(), {}, 1000, 5000, False, {}, id="lost-within-delay"),
    pytest.param({"a", "b", "d"}, set(), {"c": 0}, 5000, 5000, False, {1: {"c"}, 2: {"c"}},
                 id="lost-past-delay"),
    pytest.param({"a", "b", "d"}, set(), {}, 1000, 5000, True, {1: {"c"}, 2: {"c"}},
                 id="trigger-audit-forces"),
    pytest.param({"a", "b", "c", "d"}, {"d"}, {}, 1000, 5000, False, {2: {"d"}},
                 id="decommissioning-at-once"),
    pytest.param({"b", "d"}, set(), {}, 1000, 0, False, {1: {"a", "c"}, 2: {"a", "c"}},
                 id="two-lost"),
]


@pytest.mark.parametrize(("registered", "draining", "since", "now", "delay", "force", "marked"),
                         AUDIT_TABLE)
def test_audit_marks_the_ledgers_of_bookies_lost_long_enough(
    registered: set[str], draining: set[str], since: dict[str, int], now: int, delay: int,
    force: bool, marked: dict[int, set[str]],
) -> None:
    ledgers = [ledger(1, [(0, ("a", "b", "c"))], last=9),
               ledger(2, [(0, ("a", "c", "b")), (5, ("a", "c", "d"))], last=None)]
    result = plan.audit(ledgers, {B(b) for b in registered}, {B(b) for b in draining},
                        {B(b): t for b, t in since.items()}, now, delay, force=force)
    assert {k: set(v) for k, v in result.marks.items()} == marked


def test_audit_remembers_when_a_bookie_went_missing_and_when_it_becomes_due() -> None:
    ledgers = [ledger(1, [(0, ("a", "b", "c"))], last=9)]
    first = plan.audit(ledgers, {B("a"), B("b")}, set(), {}, 1000, 5000)
    assert first.marks == {} and first.missing_since_ms == {"c": 1000}
    assert first.next_due_ms == 6000
    later = plan.audit(ledgers, {B("a"), B("b")}, set(), first.missing_since_ms, 6000, 5000)
    assert later.marks == {1: {"c"}} and later.next_due_ms is None
    back = plan.audit(ledgers, {B("a"), B("b"), B("c")}, set(), first.missing_since_ms, 7000, 0)
    assert back.marks == {} and back.missing_since_ms == {}


# ----- the worker -----


def test_repairs_skip_the_open_fragment_and_say_it_is_affected() -> None:
    metadata = ledger(1, [(0, ("a", "b", "c")), (10, ("a", "c", "d"))], last=None)
    repair_plan = plan.repairs_for(metadata, {B("c")})
    assert [(r.fragment.index, r.position) for r in repair_plan.repairs] == [(0, 2)]
    assert repair_plan.open_fragment_affected


def test_sources_exclude_every_bookie_being_replaced() -> None:
    fragment = plan.FragmentRange(0, E(0), E(5), (B("a"), B("b"), B("c")))
    assert plan.sources_for(2, fragment, 3, 2, {B("c")}) == [B("a")]
    assert plan.sources_for(1, fragment, 3, 2, {B("c")}) == [B("b")]


def test_replacement_is_writable_outside_the_ensemble_and_not_avoided() -> None:
    candidates = infos("a", "b", "c", "d", "e", "f", read_only=("e",))
    rng = random.Random(1)
    for _ in range(50):
        chosen = plan.replacement_for(candidates, [B("a"), B("b"), B("c")], B("c"), {B("d")},
                                      rng)
        assert chosen == B("f")


def test_no_replacement_when_only_ensemble_members_and_avoided_bookies_remain() -> None:
    with pytest.raises(errors.NotEnoughBookiesError):
        plan.replacement_for(infos("a", "b", "c", "d"), [B("a"), B("b"), B("c")], B("c"),
                             {B("d")}, random.Random(0))


def test_swap_refuses_a_fragment_that_changed_since_the_plan() -> None:
    metadata = ledger(1, [(0, ("a", "b", "c"))], last=9)
    [repair] = plan.repairs_for(metadata, {B("c")}).repairs
    done = plan.swapped(metadata, repair, B("d"))
    assert done is not None and done.ensembles[0].ensemble == ("a", "b", "d")
    assert plan.swapped(done, repair, B("e")) is None


# ----- properties -----


@st.composite
def closed_ledgers(draw: st.DrawFn) -> tuple[api.LedgerMetadata, list[str]]:
    pool = [f"b{i}" for i in range(draw(st.integers(4, 8)))]
    size = draw(st.integers(1, 3))
    wq = draw(st.integers(1, size))
    aq = draw(st.integers(1, wq))
    starts = sorted(draw(st.sets(st.integers(1, 40), max_size=4)))
    fragments = [(first, tuple(draw(st.permutations(pool))[:size])) for first in [0, *starts]]
    last = draw(st.integers(fragments[-1][0] - 1, fragments[-1][0] + 20))
    return ledger(1, fragments, last=last, quorums=(size, wq, aq)), pool


@settings(max_examples=200, deadline=None)
@given(closed_ledgers(), st.data())
def test_applying_every_repair_removes_the_bad_bookies_and_keeps_the_shape(
    case: tuple[api.LedgerMetadata, list[str]], data: st.DataObject,
) -> None:
    metadata, pool = case
    bad = set(data.draw(st.sets(st.sampled_from(pool), max_size=2)))
    candidates = infos(*pool)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    current = metadata
    for _ in range(100):
        repairs = plan.repairs_for(current, {B(b) for b in bad}).repairs
        if not repairs:
            break
        try:
            target = plan.replacement_for(candidates, repairs[0].fragment.ensemble,
                                          repairs[0].bad, {B(b) for b in bad}, rng)
        except errors.NotEnoughBookiesError:
            return  # too few healthy bookies for this ensemble: nothing may change
        updated = plan.swapped(current, repairs[0], target)
        assert updated is not None
        current = updated
    assert not plan.bookies_of(current) & bad
    assert [(r.first, r.last) for r in plan.fragment_ranges(current)] == [
        (r.first, r.last) for r in plan.fragment_ranges(metadata)]
    for fragment in current.ensembles:
        assert len(set(fragment.ensemble)) == len(fragment.ensemble)
    for before, after in zip(metadata.ensembles, current.ensembles):
        for old, new in zip(before.ensemble, after.ensemble):
            assert new == old or old in bad


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 6), st.data())
def test_entries_at_matches_a_simple_model(size: int, data: st.DataObject) -> None:
    wq = data.draw(st.integers(1, size))
    first = data.draw(st.integers(0, 50))
    last = data.draw(st.integers(first - 1, first + 30))
    position = data.draw(st.integers(0, size - 1))
    fragment = plan.FragmentRange(0, E(first), E(last), tuple(B(f"b{i}") for i in range(size)))
    model = [e for e in range(first, last + 1) if (position - e) % size < wq]
    assert list(plan.entries_at(position, fragment, size, wq)) == model


# ----- placement -----


@pytest.mark.parametrize(("racks", "available", "moved"), [
    pytest.param({"a": "r1", "b": "r2", "c": "r3"}, 3, [], id="spread"),
    pytest.param({"a": "r1", "b": "r1", "c": "r2"}, 3, [("b", 1)], id="two-in-one-rack"),
    pytest.param({"a": "r1", "b": "r1", "c": "r2"}, 2, [], id="no-third-rack"),
    pytest.param({"a": "r1", "b": "r1", "c": "r1"}, 3, [("b", 1), ("c", 2)], id="all-in-one"),
    pytest.param({"a": "r1", "b": "r1", "c": "r1"}, 2, [("b", 1)], id="all-in-one-two-racks"),
    pytest.param({}, 1, [], id="no-racks-at-all"),
])
def test_placement_repairs_move_crowded_bookies_only_when_a_rack_has_room(
    racks: dict[str, str], available: int, moved: list[tuple[str, int]],
) -> None:
    metadata = ledger(1, [(0, ("a", "b", "c")), (10, ("a", "b", "c"))], last=None)
    repairs = plan.placement_repairs(metadata, {B(k): v for k, v in racks.items()}, available)
    assert [(r.bad, r.position) for r in repairs] == moved  # the open fragment is left alone
    assert all(r.fragment.index == 0 for r in repairs)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_audit_matches_a_simple_model(data: st.DataObject) -> None:
    pool = [f"b{i}" for i in range(6)]
    metadatas = []
    for ledger_id in range(data.draw(st.integers(0, 5))):
        bookies = data.draw(st.permutations(pool))[:3]
        metadatas.append(ledger(ledger_id, [(0, tuple(bookies))], last=5))
    registered = set(data.draw(st.sets(st.sampled_from(pool))))
    draining = set(data.draw(st.sets(st.sampled_from(pool), max_size=2)))
    since = {b: data.draw(st.integers(0, 100)) for b in data.draw(st.sets(st.sampled_from(pool)))}
    now, delay = 100, data.draw(st.integers(0, 150))
    force = data.draw(st.booleans())
    result = plan.audit(metadatas, {B(b) for b in registered}, {B(b) for b in draining},
                        {B(b): t for b, t in since.items()}, now, delay, force=force)

    def due(bookie: str) -> bool:
        if bookie in draining:
            return True
        return bookie not in registered and (force or now - since.get(bookie, now) >= delay)

    expected = {m.ledger_id: {b for b in plan.bookies_of(m) if due(b)} for m in metadatas}
    assert {k: set(v) for k, v in result.marks.items()} == {
        k: v for k, v in expected.items() if v}
