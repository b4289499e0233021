"""The cursor's acknowledged set: table-driven cases and properties against a plain set."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_broker.managed_ledger import api, layout, ranges

P = api.Position


def make_layout(closed: list[tuple[int, int]], open_id: int | None = 9) -> layout.LedgerLayout:
    return layout.LedgerLayout([layout.LedgerSpan(i, n) for i, n in closed], open_id)


def test_single_ack_after_mark_delete_is_kept_as_one_range() -> None:
    acks = ranges.AckSet(make_layout([(1, 10)]), P(1, -1))
    acks.acknowledge(P(1, 3))
    assert acks.ranges() == [(P(1, 2), P(1, 3))]
    assert acks.mark_delete_position == P(1, -1)
    assert acks.is_acknowledged(P(1, 3))
    assert not acks.is_acknowledged(P(1, 2))


def test_adjacent_acks_merge_into_one_range() -> None:
    acks = ranges.AckSet(make_layout([(1, 10)]), P(1, -1))
    for entry in (3, 5, 4):
        acks.acknowledge(P(1, entry))
    assert acks.ranges() == [(P(1, 2), P(1, 5))]
    assert acks.acknowledged_after_mark_delete == 3


def test_last_entry_of_a_ledger_and_first_of_the_next_are_adjacent() -> None:
    acks = ranges.AckSet(make_layout([(1, 5), (2, 0), (3, 4)]), P(1, -1))
    acks.acknowledge(P(1, 4))
    acks.acknowledge(P(3, 0))
    assert acks.ranges() == [(P(1, 3), P(3, 0))]


def test_ack_of_the_next_entry_moves_mark_delete_over_the_following_range() -> None:
    acks = ranges.AckSet(make_layout([(1, 10)]), P(1, -1))
    acks.acknowledge(P(1, 1))
    acks.acknowledge(P(1, 2))
    acks.acknowledge(P(1, 0))
    assert acks.mark_delete_position == P(1, 2)
    assert acks.ranges() == []


def test_mark_delete_moves_across_a_ledger_boundary() -> None:
    acks = ranges.AckSet(make_layout([(1, 2), (4, 3)]), P(1, 1))
    acks.acknowledge(P(9, 0))
    acks.acknowledge(P(4, 0))
    assert acks.mark_delete_position == P(4, 0)
    acks.acknowledge(P(4, 1))
    acks.acknowledge(P(4, 2))
    assert acks.mark_delete_position == P(9, 0)


def test_cumulative_ack_moves_mark_delete_past_individual_holes() -> None:
    acks = ranges.AckSet(make_layout([(1, 10)]), P(1, -1))
    acks.acknowledge(P(1, 2))
    acks.acknowledge(P(1, 6))
    acks.acknowledge(P(1, 7))
    acks.acknowledge_cumulative(P(1, 4))
    assert acks.mark_delete_position == P(1, 4)
    assert acks.ranges() == [(P(1, 5), P(1, 7))]
    acks.acknowledge(P(1, 5))
    assert acks.mark_delete_position == P(1, 7)


def test_cumulative_ack_inside_a_range_keeps_its_tail_and_count() -> None:
    acks = ranges.AckSet(make_layout([(1, 10)]), P(1, -1))
    for entry in (3, 4, 5, 6):
        acks.acknowledge(P(1, entry))
    acks.acknowledge_cumulative(P(1, 1))
    assert acks.ranges() == [(P(1, 2), P(1, 6))]
    assert acks.acknowledged_after_mark_delete == 4


def test_cumulative_ack_behind_mark_delete_changes_nothing() -> None:
    acks = ranges.AckSet(make_layout([(1, 10)]), P(1, 5))
    assert not acks.acknowledge_cumulative(P(1, 3))
    assert acks.mark_delete_position == P(1, 5)


def test_first_unacknowledged_skips_acknowledged_runs_and_empty_ledgers() -> None:
    acks = ranges.AckSet(make_layout([(1, 3), (2, 0), (3, 5)]), P(1, 0))
    acks.acknowledge(P(1, 2))
    acks.acknowledge(P(3, 0))
    assert acks.first_unacknowledged_at_or_after(P(1, 0)) == P(1, 1)
    assert acks.first_unacknowledged_at_or_after(P(1, 2)) == P(3, 1)
    assert acks.first_unacknowledged_at_or_after(P(2, 0)) == P(3, 1)


def test_loading_persisted_ranges_restores_the_same_state() -> None:
    lay = make_layout([(1, 4), (3, 6)])
    acks = ranges.AckSet(lay, P(1, 0))
    for position in (P(1, 2), P(1, 3), P(3, 0), P(3, 4), P(9, 1)):
        acks.acknowledge(position)
    restored = ranges.AckSet(lay, P(-1, -1))
    restored.load(acks.mark_delete_position, acks.ranges())
    assert restored.ranges() == acks.ranges()
    assert restored.acknowledged_after_mark_delete == acks.acknowledged_after_mark_delete


def test_ranges_can_be_limited_to_the_oldest_ones() -> None:
    acks = ranges.AckSet(make_layout([(1, 20)]), P(1, -1))
    for entry in (2, 4, 6, 8):
        acks.acknowledge(P(1, entry))
    assert acks.ranges(limit=2) == [(P(1, 1), P(1, 2)), (P(1, 3), P(1, 4))]


def test_layout_counts_positions_across_ledgers() -> None:
    lay = make_layout([(1, 3), (2, 0), (5, 4)], open_id=7)
    assert lay.count_between(P(1, -1), P(7, 1)) == 3 + 4 + 2
    assert lay.count_between(P(1, 2), P(5, 0)) == 1
    assert lay.next_position(P(1, 2)) == P(5, 0)
    assert lay.previous_position(P(5, 0)) == P(1, 2)
    assert lay.next_position(P(7, 100)) == P(7, 101)


# -- properties against a reference model ------------------------------------


@dataclass
class Model:
    """A plain set of acknowledged positions over an explicit list of positions."""

    universe: list[api.Position]
    initial_mark_delete: api.Position
    acked: set[api.Position] = field(default_factory=set)

    def mark_delete(self) -> api.Position:
        position = self.initial_mark_delete
        for candidate in self.universe:
            if candidate not in self.acked:
                break
            position = candidate
        return position

    def ranges(self) -> list[ranges.Range]:
        md = self.mark_delete()
        runs: list[ranges.Range] = []
        start: api.Position | None = None
        previous: api.Position | None = None
        for candidate in self.universe:
            if candidate <= md:
                continue
            if candidate in self.acked:
                start = start or candidate
                previous = candidate
            elif start is not None and previous is not None:
                runs.append((P(start.ledger_id, start.entry_id - 1), previous))
                start = None
        if start is not None and previous is not None:
            runs.append((P(start.ledger_id, start.entry_id - 1), previous))
        return runs


ledger_shapes = st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=4)
operations = st.lists(
    st.tuples(st.sampled_from(["ack", "cumulative", "grow", "rollover"]), st.integers(0, 200)),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(shape=ledger_shapes, open_entries=st.integers(0, 4), ops=operations)
def test_ack_set_agrees_with_a_plain_set_of_positions(
    shape: list[int], open_entries: int, ops: list[tuple[str, int]]
) -> None:
    closed = [(10 + 2 * i, n) for i, n in enumerate(shape)]
    open_id = 10 + 2 * len(shape)
    lay = make_layout(closed, open_id)
    universe = [P(i, e) for i, n in closed for e in range(n)]
    universe += [P(open_id, e) for e in range(open_entries)]
    open_count = open_entries
    model = Model(universe, P(closed[0][0], -1))
    acks = ranges.AckSet(lay, model.initial_mark_delete)
    for op, value in ops:
        if op == "grow":
            universe.extend(P(open_id, open_count + k) for k in range(value % 3 + 1))
            open_count += value % 3 + 1
        elif op == "rollover":
            lay.close_open_ledger(open_count)
            open_id += 1 + value % 2
            lay.add_open_ledger(open_id)
            open_count = 0
        elif universe:
            target = universe[value % len(universe)]
            if op == "ack":
                acks.acknowledge(target)
                model.acked.add(target)
            else:
                acks.acknowledge_cumulative(target)
                model.acked.update(p for p in universe if p <= target)
        check_agreement(acks, model, lay)


def check_agreement(acks: ranges.AckSet, model: Model, lay: layout.LedgerLayout) -> None:
    md = model.mark_delete()
    assert acks.mark_delete_position == md
    assert acks.ranges() == model.ranges()
    for position in model.universe:
        assert acks.is_acknowledged(position) == (position in model.acked)
    if model.universe:
        last = model.universe[-1]
        backlog = lay.count_between(md, last) - acks.acknowledged_after_mark_delete
        assert backlog == sum(1 for p in model.universe if p not in model.acked)
        first_open = next((p for p in model.universe if p not in model.acked), None)
        found = acks.first_unacknowledged_at_or_after(model.universe[0])
        if first_open is not None:
            assert found == first_open
        else:
            assert found > last
    restored = ranges.AckSet(lay, P(-1, -1))
    restored.load(acks.mark_delete_position, acks.ranges())
    assert restored.ranges() == acks.ranges()
    assert restored.acknowledged_after_mark_delete == acks.acknowledged_after_mark_delete


@settings(max_examples=200, deadline=None)
@given(
    shape=ledger_shapes,
    with_open=st.booleans(),
    start=st.integers(0, 30),
    steps=st.integers(1, 12),
)
def test_advance_equals_repeated_next_position(
    shape: list[int], with_open: bool, start: int, steps: int
) -> None:
    closed = [(10 + 2 * i, n) for i, n in enumerate(shape)]
    lay = make_layout(closed, 10 + 2 * len(shape) if with_open else None)
    universe = [P(i, -1) for i, _ in closed] + [P(i, e) for i, n in closed for e in range(n)]
    origin = sorted(universe)[start % len(universe)]
    expected = origin
    for _ in range(steps):
        expected = lay.next_position(expected)
    assert lay.advance(origin, steps) == expected
    if lay.exists(expected) and lay.exists(origin):
        assert lay.count_between(origin, expected) == steps
        assert lay.previous_position(lay.next_position(origin)) == origin
