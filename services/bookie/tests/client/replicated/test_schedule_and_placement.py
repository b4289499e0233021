"""Write sets, quorum coverage and ensemble placement."""

from __future__ import annotations

import random

import pytest

from pulsar_bookie import types
from pulsar_bookie.client.replicated import placement, schedule


@pytest.mark.parametrize(("entry", "e", "wq", "expected"), [
    (0, 3, 3, [0, 1, 2]), (1, 3, 2, [1, 2]), (2, 3, 2, [2, 0]), (7, 5, 3, [2, 3, 4]),
])
def test_entries_are_striped_round_robin(entry, e, wq, expected):
    assert schedule.write_set(entry, e, wq) == expected


@pytest.mark.parametrize(("responded", "e", "wq", "aq", "covered"), [
    ({0, 1}, 3, 3, 2, True),        # (E - AQ) + 1 = 2 replies
    ({0}, 3, 3, 2, False),
    ({0}, 3, 3, 3, True),           # AQ = WQ: one reply already blocks every ack quorum
    ({0, 1, 2}, 3, 3, 1, True),
    ({0, 1}, 3, 3, 1, False),       # AQ = 1: every bookie must be fenced
    ({0, 2}, 4, 2, 2, True),        # striping: each write set {i, i+1} holds 0 or 2
    ({0, 1}, 4, 2, 2, False),       # write set {2, 3} has no fenced member
    ({0, 2}, 4, 2, 1, False),
    ({1, 3}, 4, 2, 2, True),
])
def test_fencing_must_cover_every_ack_quorum(responded, e, wq, aq, covered):
    assert schedule.covers_every_ack_quorum(responded, e, wq, aq) is covered


@pytest.mark.parametrize(("no_such", "wq", "aq", "absent"), [
    (1, 3, 2, False), (2, 3, 2, True), (1, 3, 3, True), (2, 3, 1, False), (3, 3, 1, True),
])
def test_entry_is_absent_only_when_no_ack_quorum_could_hold_it(no_such, wq, aq, absent):
    assert schedule.entry_absent(set(range(no_such)), wq, aq) is absent


def _bookies(racks):
    return [placement.BookieInfo(types.BookieId(f"b{i}:3181"), rack) for i, rack in
            enumerate(racks)]


def test_ensemble_spreads_over_racks():
    candidates = _bookies(["a", "a", "a", "b", "b", "c"])
    for seed in range(20):
        chosen = placement.choose_ensemble(candidates, 3, random.Random(seed))
        racks = {c.rack for c in candidates if c.bookie_id in chosen}
        assert racks == {"a", "b", "c"}


def test_read_only_bookies_are_never_chosen():
    candidates = _bookies(["", "", ""]) + [placement.BookieInfo(types.BookieId("ro:1"),
                                                                writable=False)]
    chosen = placement.choose_ensemble(candidates, 3, random.Random(1))
    assert "ro:1" not in chosen


def test_not_enough_bookies_is_a_clear_error():
    with pytest.raises(placement.NotEnoughBookiesError, match="need 3 bookies, 2"):
        placement.choose_ensemble(_bookies(["", ""]), 3, random.Random(0))


def test_replacement_is_outside_the_ensemble():
    candidates = _bookies(["a", "b", "c", "a"])
    ensemble = [c.bookie_id for c in candidates[:3]]
    new = placement.replace_bookie(candidates, ensemble, ensemble[0], random.Random(0))
    assert new == "b3:3181"
