"""The leader's assignment of instances to workers (a pure decision)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pulsar_functions.worker import scheduler


def test_instances_stay_on_live_workers_and_orphans_go_to_the_least_loaded() -> None:
    current = {"f:0": "w1", "f:1": "w2", "f:2": "w2"}
    assert scheduler.assign(["f:0", "f:1", "f:2", "g:0"], ["w1", "w3"], current) == {
        "f:0": "w1", "f:1": "w3", "f:2": "w1", "g:0": "w3"}


def test_nothing_is_assigned_without_a_live_worker() -> None:
    assert scheduler.assign(["f:0"], [], {"f:0": "gone"}) == {}


@given(st.sets(st.integers(0, 30)), st.sets(st.sampled_from("abcde"), min_size=1))
def test_a_fresh_assignment_is_balanced_and_complete(instances: set[int],
                                                     workers: set[str]) -> None:
    keys = [scheduler.instance_key("t/n/f", i) for i in instances]
    result = scheduler.assign(keys, workers, {})
    assert set(result) == set(keys) and set(result.values()) <= workers
    loads = [list(result.values()).count(w) for w in workers]
    assert max(loads) - min(loads) <= 1
