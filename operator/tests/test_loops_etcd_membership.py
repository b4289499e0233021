"""The etcd membership planner, driven against a small model of etcd and its StatefulSet:
members change one at a time (a learner first, promoted once its pod runs), a member leaves
before its pod, quorum is never put at risk, steps cut short are planned again, and the
member count ends where the spec asks."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_operator.loops import etcd_membership as em

NAMES = {i: (f"e-{i}", f"http://e-{i}:2380") for i in range(7)}


@dataclasses.dataclass
class Model:
    rng: random.Random
    wanted: int
    replicas: int
    members: dict[int, em.Member]
    volumes: set[int]
    ready: set[int]
    next_id: int = 100

    def observe(self) -> em.State:
        pods = frozenset(range(self.replicas)) | frozenset(o for o in self.ready if o >= self.replicas)
        return em.State(self.wanted, self.replicas, {o: o in self.ready for o in pods}, pods,
                        frozenset(self.volumes), list(self.members.values()), NAMES)

    def tick(self) -> None:
        for ordinal in range(self.replicas):
            self.volumes.add(ordinal)
            member = self.members.get(ordinal)
            if member is not None and not member.name and self.rng.random() < 0.7:
                self.members[ordinal] = dataclasses.replace(member, name=NAMES[ordinal][0])
            if member is not None and self.rng.random() < 0.7:
                self.ready.add(ordinal)
        self.ready = {o for o in self.ready if o < self.replicas or self.rng.random() < 0.3}

    def apply(self, action: em.Action) -> None:
        voters = [m for m in self.members.values() if not m.learner]
        if isinstance(action, em.AddLearner):
            assert not any(m.learner or not m.name for m in self.members.values()), "one change at a time"
            assert action.ordinal == len(self.members) and action.ordinal not in self.volumes
            self.members[action.ordinal] = em.Member(str(self.next_id), "", action.peer_url, True)
            self.next_id += 1
        elif isinstance(action, em.Promote):
            ordinal = next(o for o, m in self.members.items() if m.member_id == action.member_id)
            assert ordinal in self.ready, "a learner is promoted only once it runs"
            self.members[ordinal] = dataclasses.replace(self.members[ordinal], learner=False)
        elif isinstance(action, em.RemoveMember):
            ordinal = next(o for o, m in self.members.items() if m.member_id == action.member_id)
            assert ordinal == max(self.members), "the highest ordinal leaves first"
            assert len(voters) >= 2 and all(o in self.ready for o in self.members), "quorum kept"
            del self.members[ordinal]
        elif isinstance(action, em.ScaleTo):
            assert abs(action.replicas - self.replicas) == 1
            assert action.replicas == len(self.members), "pods follow members"
            assert action.initial_cluster.count("=") == action.replicas
            self.replicas = action.replicas
        elif isinstance(action, em.ReleaseVolume):
            assert action.ordinal >= self.replicas and action.ordinal not in self.members
            self.volumes.discard(action.ordinal)


def drive(seed: int, start: int, wanted: int, crash_rate: float) -> Model:
    rng = random.Random(seed)
    members = {i: em.Member(str(i), NAMES[i][0], NAMES[i][1], False) for i in range(start)}
    model = Model(rng, wanted, start, members, set(range(start)), set(range(start)))
    for _ in range(300):
        out = em.plan(model.observe())
        done = out.actions[: rng.randint(0, len(out.actions))] if rng.random() < crash_rate else out.actions
        for action in done:
            model.apply(action)
        model.tick()
    return model


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32), start=st.sampled_from([1, 3, 5]), wanted=st.sampled_from([1, 3, 5, 7]),
       crash_rate=st.sampled_from([0.0, 0.3]))
def test_members_change_one_at_a_time_keep_quorum_and_end_at_the_asked_count(
        seed: int, start: int, wanted: int, crash_rate: float) -> None:
    model = drive(seed, start, wanted, crash_rate)
    assert len(model.members) == model.replicas == wanted, f"seed {seed}"
    assert not any(m.learner for m in model.members.values())
    assert model.volumes <= set(range(wanted))


def test_an_unreadable_member_list_changes_nothing() -> None:
    state = em.State(3, 1, {0: True}, frozenset({0}), frozenset({0}), None, NAMES)
    out = em.plan(state)
    assert out.actions == () and out.condition.reason == "Unknown"


def test_scaling_up_adds_a_learner_then_starts_its_pod_with_the_existing_members() -> None:
    one = [em.Member("1", "e-0", NAMES[0][1], False)]
    out = em.plan(em.State(3, 1, {0: True}, frozenset({0}), frozenset({0}), one, NAMES))
    assert out.actions == (em.AddLearner(1, NAMES[1][1]),)
    two = [*one, em.Member("2", "", NAMES[1][1], True)]
    out = em.plan(em.State(3, 1, {0: True}, frozenset({0}), frozenset({0}), two, NAMES))
    assert out.actions == (em.ScaleTo(2, "e-0=http://e-0:2380,e-1=http://e-1:2380"),)
