"""The decommission planner: table-driven steps, and a seeded model of a cluster it drives,
with operator crashes at any step, checked for safety (no bookie leaves while a ledger
needs it) and for progress (it ends at the asked size)."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_operator.loops import decommission as dc

NOW = 1_000_000


def bookie(ordinal: int, **changes: object) -> dc.Bookie:
    base = dc.Bookie(ordinal, f"b{ordinal}:3181", pod_exists=True, registered=True, read_only=False,
                     ledgers=5, disk_usage=0.1)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def state(current: int = 4, wanted: int = 3, progress: dc.Progress | None = None, **changes: object) -> dc.State:
    base = dc.State(enabled=True, wanted=wanted, current=current, ensemble_size=2, write_quorum=2,
                    bookies={i: bookie(i) for i in range(current)}, under_replicated=0, progress=progress,
                    now_ms=NOW, drain_timeout_ms=60_000)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def with_bookie(s: dc.State, ordinal: int, **changes: object) -> dc.State:
    bookies = dict(s.bookies)
    bookies[ordinal] = dataclasses.replace(bookies[ordinal], **changes)  # type: ignore[arg-type]
    return dataclasses.replace(s, bookies=bookies)


def test_a_lower_replica_count_starts_with_the_highest_ordinal_made_read_only() -> None:
    out = dc.plan(state())
    assert out.actions == (dc.SetReadOnly(3, "b3:3181", True),)
    assert out.progress == dc.Progress(3, dc.Phase.READ_ONLY, NOW)
    assert (out.condition.status, out.condition.reason) == (True, "MakingReadOnly")
    assert [e.reason for e in out.events] == ["DecommissionStarted"]


def test_a_read_only_bookie_is_drained_then_scaled_away_only_when_nothing_needs_it() -> None:
    progress = dc.Progress(3, dc.Phase.READ_ONLY, NOW)
    s = with_bookie(state(progress=progress), 3, read_only=True)
    draining = dc.plan(s)
    assert draining.actions == (dc.StartDrain(3, "b3:3181"),)
    assert draining.progress is not None and draining.progress.phase is dc.Phase.DRAINING
    s = dataclasses.replace(s, progress=draining.progress)
    assert dc.plan(with_bookie(s, 3, ledgers=0)).actions[0] == dc.ScaleDown(3)
    assert dc.ScaleDown(3) not in dc.plan(dataclasses.replace(with_bookie(s, 3, ledgers=0), under_replicated=1)).actions
    assert dc.ScaleDown(3) not in dc.plan(dataclasses.replace(with_bookie(s, 3, ledgers=0), under_replicated=None)).actions
    assert dc.ScaleDown(3) not in dc.plan(with_bookie(s, 3, ledgers=None)).actions


def test_after_the_scale_down_the_bookie_is_forgotten_once_its_pod_is_gone() -> None:
    progress = dc.Progress(3, dc.Phase.SCALED_DOWN, NOW - 42_000)
    s = state(current=3, progress=progress, bookies={i: bookie(i) for i in range(4)})
    assert dc.plan(s).actions == () and dc.plan(s).condition.reason == "WaitingForPodToStop"
    done = dc.plan(with_bookie(s, 3, pod_exists=False))
    assert done.actions == (dc.ForgetBookie(3, "b3:3181"),)
    assert done.progress is None and done.completed == 1
    assert [e.reason for e in done.events] == ["BookieDecommissioned"]
    released = dc.plan(dataclasses.replace(with_bookie(s, 3, pod_exists=False), release_volumes=True))
    assert released.actions == (dc.ForgetBookie(3, "b3:3181"), dc.ReleaseVolumes(3))


@pytest.mark.parametrize(("changes", "reason", "words"), [
    ({"wanted": 1}, "Refused", "ensemble size 2"),
    ({"bookies": {i: bookie(i, disk_usage=0.7) for i in range(4)}}, "Refused", "2.80 bookie disks"),
    ({"under_replicated": 3}, "Waiting", "3 ledgers are under-replicated"),
    ({"bookies": {i: bookie(i, registered=i != 1) for i in range(4)}}, "Waiting", "[1]"),
    ({"enabled": False}, "Disabled", "spec.decommission.enabled is false"),
])
def test_a_decommission_that_cannot_be_safe_is_refused_or_waits_with_the_reason(
        changes: dict[str, object], reason: str, words: str) -> None:
    out = dc.plan(dataclasses.replace(state(), **changes))  # type: ignore[arg-type]
    assert out.actions == () and out.progress is None
    assert (out.condition.status, out.condition.reason) == (False, reason)
    assert words in out.condition.message


def test_asking_for_the_bookie_back_before_its_pod_goes_makes_it_writable_again() -> None:
    progress = dc.Progress(3, dc.Phase.DRAINING, NOW)
    out = dc.plan(with_bookie(state(wanted=4, progress=progress), 3, read_only=True))
    assert out.actions == (dc.SetReadOnly(3, "b3:3181", False),)
    assert out.progress is None and out.condition.reason == "Cancelled"


def test_a_drain_past_its_timeout_stays_in_place_and_says_so() -> None:
    progress = dc.Progress(3, dc.Phase.DRAINING, NOW - 61_000)
    out = dc.plan(with_bookie(state(progress=progress), 3, read_only=True))
    assert out.actions == () and out.condition.reason == "DrainTimedOut"
    assert out.progress == dc.Progress(3, dc.Phase.DRAINING, NOW - 61_000)


@dataclasses.dataclass
class Model:
    """A bookie cluster as the planner sees it, with drains that take a few steps."""

    rng: random.Random
    current: int
    wanted: int
    ledgers: dict[int, int]
    read_only: set[int] = dataclasses.field(default_factory=set)
    draining: set[int] = dataclasses.field(default_factory=set)
    pods: set[int] = dataclasses.field(default_factory=set)
    forgotten: set[int] = dataclasses.field(default_factory=set)
    under_replicated: int = 0
    progress: dc.Progress | None = None
    now_ms: int = NOW

    def observe(self) -> dc.State:
        bookies = {i: dc.Bookie(i, f"b{i}", i in self.pods, i in self.pods and i not in self.forgotten,
                                i in self.read_only, self.ledgers.get(i, 0), 0.01)
                   for i in range(max(self.pods | {self.current - 1}) + 1)}
        return dc.State(True, self.wanted, self.current, 2, 2, bookies, self.under_replicated, self.progress,
                        self.now_ms, 10**9)

    def tick(self) -> None:
        """Time passes: drains move ledgers to bookies that stay, stopped pods go."""
        self.now_ms += 1000
        for ordinal in list(self.draining):
            moved = min(self.ledgers[ordinal], self.rng.randint(0, 3))
            self.ledgers[ordinal] -= moved
            self.ledgers[self.rng.randrange(self.wanted)] += moved
            self.under_replicated = self.rng.choice([0, 0, moved])
        for ordinal in list(self.pods):
            if ordinal >= self.current and self.rng.random() < 0.5:
                self.pods.discard(ordinal)

    def apply(self, action: dc.Action) -> None:
        if isinstance(action, dc.SetReadOnly):
            (self.read_only.add if action.read_only else self.read_only.discard)(action.ordinal)
            if not action.read_only:
                self.draining.discard(action.ordinal)
        elif isinstance(action, dc.StartDrain):
            self.draining.add(action.ordinal)
        elif isinstance(action, dc.ScaleDown):
            removed = self.current - 1
            assert action.replicas == removed, "one bookie at a time, the highest first"
            assert removed >= 2, "never fewer bookies than the ensemble"
            assert self.ledgers[removed] == 0 and removed in self.read_only, "a bookie left with data on it"
            assert self.under_replicated == 0, "a bookie left while ledgers were under-replicated"
            self.current = action.replicas
        elif isinstance(action, dc.ForgetBookie):
            assert action.ordinal not in self.pods and action.ordinal >= self.current
            self.forgotten.add(action.ordinal)


def drive(seed: int, start: int, wanted: int, crash_rate: float, steps: int = 400) -> Model:
    rng = random.Random(seed)
    model = Model(rng, start, wanted, {i: rng.randint(0, 6) for i in range(start)}, pods=set(range(start)))
    for _ in range(steps):
        out = dc.plan(model.observe())
        crashed = rng.random() < crash_rate
        done = out.actions[: rng.randint(0, len(out.actions))] if crashed else out.actions
        for action in done:
            model.apply(action)
        if not crashed:
            model.progress = out.progress
        model.tick()
    return model


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), start=st.integers(2, 6), wanted=st.integers(1, 6),
       crash_rate=st.sampled_from([0.0, 0.2, 0.5]))
def test_killed_at_any_step_it_never_drops_a_needed_bookie_and_ends_at_the_asked_size(
        seed: int, start: int, wanted: int, crash_rate: float) -> None:
    model = drive(seed, start, wanted, crash_rate)
    if wanted >= start:
        assert model.current == start and not model.read_only
    elif wanted < 2:
        assert model.current == start, "refused: the ensemble would not fit"
    else:
        assert model.current == wanted, f"seed {seed}: stopped at {model.current}"
        assert model.progress is None
        assert all(i in model.forgotten for i in range(wanted, start))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_the_user_changing_their_mind_midway_leaves_every_kept_bookie_writable(seed: int) -> None:
    rng = random.Random(seed)
    model = Model(rng, 5, 3, {i: rng.randint(0, 6) for i in range(5)}, pods=set(range(5)))
    for step in range(300):
        if step == rng.randint(0, 40):
            model.wanted = 5
        out = dc.plan(model.observe())
        for action in out.actions:
            model.apply(action)
        model.progress = out.progress
        model.tick()
    assert model.progress is None
    assert not {i for i in model.read_only if i < model.current}, "a kept bookie left read-only"
