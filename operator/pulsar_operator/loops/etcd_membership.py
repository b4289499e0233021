"""etcd membership, planned: one member added or removed at a time, quorum kept throughout.

Scaling up adds the next ordinal as a learner (it does not count for quorum until it has
caught up), then creates its pod with `--initial-cluster-state existing` and the members
so far, then promotes it once its pod is ready. Scaling down removes the highest
ordinal's member first, then its pod, then its volume (stale member data would keep a
later pod of the same name from joining). Every step is derived from what etcd and the
StatefulSet say now, so a step cut short is simply planned again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pulsar_operator import conditions
from pulsar_operator.loops import report

CONDITION = "EtcdMembership"


@dataclasses.dataclass(frozen=True)
class Member:
    member_id: str
    #: Empty until the member's etcd has started (etcd reports an added, unstarted member without a name).
    name: str
    peer_url: str
    learner: bool


@dataclasses.dataclass(frozen=True)
class State:
    wanted: int
    #: The etcd StatefulSet's spec.replicas.
    replicas: int
    #: Ordinal -> pod ready.
    ready: dict[int, bool]
    #: Ordinals whose pod exists.
    pods: frozenset[int]
    #: Ordinals whose data volume exists.
    volumes: frozenset[int]
    members: Sequence[Member] | None
    #: Ordinal -> (pod name, peer URL) as the StatefulSet names them.
    names: dict[int, tuple[str, str]]


@dataclasses.dataclass(frozen=True)
class AddLearner:
    ordinal: int
    peer_url: str


@dataclasses.dataclass(frozen=True)
class Promote:
    member_id: str


@dataclasses.dataclass(frozen=True)
class RemoveMember:
    member_id: str


@dataclasses.dataclass(frozen=True)
class ScaleTo:
    """Patch the StatefulSet: replicas, and the initial cluster a new pod starts with."""

    replicas: int
    initial_cluster: str


@dataclasses.dataclass(frozen=True)
class ReleaseVolume:
    ordinal: int


Action = AddLearner | Promote | RemoveMember | ScaleTo | ReleaseVolume


@dataclasses.dataclass(frozen=True)
class Outcome:
    actions: tuple[Action, ...]
    condition: conditions.Condition
    events: tuple[report.Event, ...] = ()


def initial_cluster(state: State, count: int) -> str:
    return ",".join(f"{state.names[i][0]}={state.names[i][1]}" for i in range(count))


def _ordinal(state: State, member: Member) -> int | None:
    return next((i for i, (_, url) in state.names.items() if url == member.peer_url), None)


def _busy(message: str) -> Outcome:
    return Outcome((), conditions.Condition(CONDITION, True, "Changing", message))


def plan(state: State) -> Outcome:
    if state.members is None:
        return Outcome((), conditions.Condition(CONDITION, False, "Unknown", "etcd's member list could not be read"))
    count = len(state.members)
    by_ordinal = {_ordinal(state, m): m for m in state.members}
    if None in by_ordinal:
        return Outcome((), conditions.Condition(CONDITION, False, "Foreign", "a member is not a pod of this cluster"))
    if state.replicas < count:
        # A member was added and its pod is not there yet (or a step was cut short): create it.
        return Outcome((ScaleTo(count, initial_cluster(state, count)),),
                       conditions.Condition(CONDITION, True, "StartingMember", f"etcd member {count - 1} starting"))
    learner = next((m for m in state.members if m.learner), None)
    if learner is not None:
        ordinal = _ordinal(state, learner)
        if learner.name and ordinal is not None and state.ready.get(ordinal):
            return Outcome((Promote(learner.member_id),), conditions.Condition(
                CONDITION, True, "PromotingMember", f"etcd member {ordinal} caught up: promoted to voter"),
                (report.Event(report.NORMAL, "EtcdMemberAdded", f"etcd member {ordinal} joined and was promoted"),))
        return _busy(f"etcd member {ordinal} (learner) is catching up")
    if state.replicas > count:
        # A member was removed: its pod goes next, then its volume.
        return Outcome((ScaleTo(count, initial_cluster(state, count)),), conditions.Condition(
            CONDITION, True, "StoppingMember", f"etcd member {count} removed; its pod stops"))
    stale = sorted(o for o in state.volumes if o >= count and o not in state.pods)
    if stale:
        return Outcome(tuple(ReleaseVolume(o) for o in stale), conditions.Condition(
            CONDITION, True, "ReleasingVolume", f"data of removed etcd members {stale} released"))
    if not all(m.name for m in state.members) or not all(state.ready.get(i) for i in range(count)):
        return _busy("waiting for every etcd member to run before the next change")
    if state.wanted > count:
        url = state.names[count][1]
        return Outcome((AddLearner(count, url),), conditions.Condition(
            CONDITION, True, "AddingMember", f"etcd member {count} added as a learner ({count} -> {state.wanted})"),
            (report.Event(report.NORMAL, "EtcdMemberAdding", f"etcd member {count} added as a learner"),))
    if state.wanted < count:
        last = by_ordinal[count - 1]
        return Outcome((RemoveMember(last.member_id),), conditions.Condition(
            CONDITION, True, "RemovingMember", f"etcd member {count - 1} removed ({count} -> {state.wanted})"),
            (report.Event(report.NORMAL, "EtcdMemberRemoved", f"etcd member {count - 1} removed from the cluster"),))
    return Outcome((), conditions.Condition(CONDITION, False, "AsExpected", f"{count} etcd members, as the spec asks"))
