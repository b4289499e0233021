"""Bookie decommission, planned: which step to take next when spec.bookkeeper.replicas goes down.

One bookie at a time, highest ordinal first, each through these phases (kept in
status.decommission, so an operator killed at any step resumes where it was):

    ReadOnly   the bookie is set read-only: no new ledger is placed on it
    Draining   its fragments are re-replicated elsewhere (the bookies' decommission call),
               until no ledger names it and no ledger is under-replicated
    ScaledDown the StatefulSet is one replica smaller; once the pod is gone the bookie's
               cookie and registration are removed and, with whenScaled=Delete, its volumes

Safety rests on what is observed in the same step, never on remembered progress: the
StatefulSet shrinks only while the bookie it drops is read-only, is named by no ledger
and no ledger is under-replicated. Progress only picks the next action. A decommission
is refused (a condition says why) when the bookies left could not hold the ensemble
(E) or the data; it is cancelled, the bookie made writable again, when the spec asks
for the bookie back before its pod went.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from pulsar_operator import conditions
from pulsar_operator.loops import report

CONDITION = "BookieDecommission"
#: The bookies left may fill their disks up to this share with the data of those removed.
REMAINING_DISK_USAGE_MAX = 0.9


class Phase(enum.Enum):
    READ_ONLY = "ReadOnly"
    DRAINING = "Draining"
    SCALED_DOWN = "ScaledDown"


@dataclasses.dataclass(frozen=True)
class Bookie:
    """One bookie of the StatefulSet as observed (None: could not be read this time)."""

    ordinal: int
    bookie_id: str
    pod_exists: bool
    registered: bool
    read_only: bool
    #: Ledgers whose ensembles still name this bookie.
    ledgers: int | None = None
    #: Share of its ledger disk in use (0..1); every bookie has the same volume size (one claim template).
    disk_usage: float | None = None


@dataclasses.dataclass(frozen=True)
class Progress:
    """The bookie being decommissioned and its phase; status.decommission."""

    ordinal: int
    phase: Phase
    started_ms: int

    def to_status(self) -> dict[str, Any]:
        return {"ordinal": self.ordinal, "phase": self.phase.value, "startedMs": self.started_ms}

    @staticmethod
    def of(raw: Any) -> Progress | None:
        if not isinstance(raw, Mapping) or raw.get("phase") is None or raw.get("ordinal") is None:
            return None
        try:
            return Progress(int(raw["ordinal"]), Phase(raw["phase"]), int(raw.get("startedMs") or 0))
        except ValueError:
            return None


@dataclasses.dataclass(frozen=True)
class State:
    enabled: bool
    #: spec.bookkeeper.replicas.
    wanted: int
    #: The bookie StatefulSet's spec.replicas (None: it does not exist yet).
    current: int | None
    ensemble_size: int
    write_quorum: int
    bookies: Mapping[int, Bookie]
    #: Ledgers under-replicated in the whole cluster (None: unknown).
    under_replicated: int | None
    progress: Progress | None
    now_ms: int
    drain_timeout_ms: int
    release_volumes: bool = False


@dataclasses.dataclass(frozen=True)
class SetReadOnly:
    ordinal: int
    bookie_id: str
    read_only: bool


@dataclasses.dataclass(frozen=True)
class StartDrain:
    """Ask the bookies to re-replicate every fragment of this bookie (idempotent)."""

    ordinal: int
    bookie_id: str


@dataclasses.dataclass(frozen=True)
class ScaleDown:
    replicas: int


@dataclasses.dataclass(frozen=True)
class ForgetBookie:
    """Remove the cookie and registration of a bookie whose pod is gone."""

    ordinal: int
    bookie_id: str


@dataclasses.dataclass(frozen=True)
class ReleaseVolumes:
    ordinal: int


Action = SetReadOnly | StartDrain | ScaleDown | ForgetBookie | ReleaseVolumes


@dataclasses.dataclass(frozen=True)
class Outcome:
    actions: tuple[Action, ...]
    #: The progress to keep once every action succeeded.
    progress: Progress | None
    condition: conditions.Condition
    events: tuple[report.Event, ...] = ()
    #: Bookies whose decommission ended with this step (for status.decommission counters).
    completed: int = 0


def _idle(message: str) -> Outcome:
    return Outcome((), None, conditions.Condition(CONDITION, False, "Idle", message))


def _hold(progress: Progress | None, reason: str, message: str, active: bool = True) -> Outcome:
    return Outcome((), progress, conditions.Condition(CONDITION, active, reason, message))


def _bookie_id(state: State, ordinal: int) -> str:
    bookie = state.bookies.get(ordinal)
    return bookie.bookie_id if bookie else ""


def refusal(state: State) -> str | None:
    """Why the bookies left after the scale-down could not take over, or None."""
    if state.wanted < state.ensemble_size:
        return (f"{state.wanted} bookies cannot hold ledgers of ensemble size {state.ensemble_size} "
                f"(write quorum {state.write_quorum}); keep at least {state.ensemble_size}")
    current = state.current or 0
    known = [b for i in range(current) if (b := state.bookies.get(i)) is not None and b.disk_usage is not None]
    if len(known) < current:
        return None  # usage unknown: the check cannot be made; the bookies refuse a drain that cannot fit
    used = sum(b.disk_usage or 0.0 for b in known)
    if used > state.wanted * REMAINING_DISK_USAGE_MAX:
        return (f"the data fills {used:.2f} bookie disks; {state.wanted} bookies of the same size would be "
                f"more than {REMAINING_DISK_USAGE_MAX:.0%} full")
    return None


def _not_ready(state: State, current: int) -> str | None:
    """Why no decommission may start now: every bookie up and nothing under-replicated first."""
    missing = [i for i in range(current) if not (b := state.bookies.get(i)) or not b.registered]
    if missing:
        return f"bookies {missing} are not registered; waiting for every bookie before removing one"
    if state.under_replicated is None:
        return "the number of under-replicated ledgers is unknown"
    if state.under_replicated:
        return f"{state.under_replicated} ledgers are under-replicated; waiting for recovery first"
    return None


def _start(state: State, current: int) -> Outcome:
    if not state.enabled:
        return _hold(None, "Disabled", f"spec.decommission.enabled is false: the bookie StatefulSet keeps "
                     f"{current} replicas although spec.bookkeeper.replicas is {state.wanted}", False)
    why = refusal(state)
    if why:
        return _hold(None, "Refused", why, False)
    wait = _not_ready(state, current)
    if wait:
        return _hold(None, "Waiting", wait, False)
    ordinal = current - 1
    bookie_id = _bookie_id(state, ordinal)
    progress = Progress(ordinal, Phase.READ_ONLY, state.now_ms)
    return Outcome(
        (SetReadOnly(ordinal, bookie_id, True),), progress,
        conditions.Condition(CONDITION, True, "MakingReadOnly", f"bookie {ordinal} ({bookie_id}) set read-only"),
        (report.Event(report.NORMAL, "DecommissionStarted",
                      f"decommissioning bookie {ordinal} ({bookie_id}): {current} -> {state.wanted} bookies"),),
    )


def _finish(state: State, progress: Progress) -> Outcome:
    ordinal = progress.ordinal
    bookie = state.bookies.get(ordinal)
    gone = dataclasses.replace(progress, phase=Phase.SCALED_DOWN)
    if bookie is not None and bookie.pod_exists:
        return _hold(gone, "WaitingForPodToStop", f"bookie {ordinal}'s pod is stopping")
    actions: list[Action] = [ForgetBookie(ordinal, _bookie_id(state, ordinal))]
    if state.release_volumes:
        actions.append(ReleaseVolumes(ordinal))
    seconds = max(0, state.now_ms - progress.started_ms) // 1000
    return Outcome(
        tuple(actions), None,
        conditions.Condition(CONDITION, False, "Decommissioned", f"bookie {ordinal} removed after {seconds} s"),
        (report.Event(report.NORMAL, "BookieDecommissioned",
                      f"bookie {ordinal} drained, stopped and forgotten in {seconds} s"
                      + ("; its volumes released" if state.release_volumes else "; its volumes kept")),),
        completed=1,
    )


def _drain(state: State, progress: Progress, current: int) -> Outcome:
    ordinal = progress.ordinal
    bookie = state.bookies.get(ordinal)
    bookie_id = _bookie_id(state, ordinal)
    if bookie is None or not bookie.read_only:
        return Outcome((SetReadOnly(ordinal, bookie_id, True),), dataclasses.replace(progress, phase=Phase.READ_ONLY),
                       conditions.Condition(CONDITION, True, "MakingReadOnly", f"bookie {ordinal} set read-only"))
    drained = bookie.ledgers == 0 and state.under_replicated == 0
    if drained and current == ordinal + 1:
        return Outcome(
            (ScaleDown(ordinal),), dataclasses.replace(progress, phase=Phase.SCALED_DOWN),
            conditions.Condition(CONDITION, True, "ScalingDown", f"bookie {ordinal} drained; StatefulSet -> {ordinal}"),
            (report.Event(report.NORMAL, "BookieDrained",
                          f"bookie {ordinal} holds no ledger and none is under-replicated; scaling to {ordinal}"),),
        )
    draining = dataclasses.replace(progress, phase=Phase.DRAINING)
    if state.now_ms - progress.started_ms > state.drain_timeout_ms:
        return _hold(draining, "DrainTimedOut",
                     f"bookie {ordinal} still holds {bookie.ledgers} ledgers after "
                     f"{state.drain_timeout_ms // 1000} s (spec.decommission.drainTimeoutSeconds); it stays "
                     "read-only and in place; raise spec.bookkeeper.replicas to cancel")
    left = "unknown" if bookie.ledgers is None else str(bookie.ledgers)
    events = ((report.Event(report.NORMAL, "BookieDraining", f"bookie {ordinal} is read-only; re-replicating "
                            "its fragments"),) if progress.phase is Phase.READ_ONLY else ())
    return Outcome((StartDrain(ordinal, bookie_id),), draining,
                   conditions.Condition(CONDITION, True, "Draining",
                                        f"bookie {ordinal}: {left} ledgers left on it, "
                                        f"{state.under_replicated} under-replicated"), events)


def plan(state: State) -> Outcome:
    """The next step of the decommission, from what is observed now and the progress kept."""
    current = state.current
    progress = state.progress
    if current is None:
        return _idle("no bookie StatefulSet yet")
    if progress is not None and current <= progress.ordinal:
        return _finish(state, progress)
    if progress is not None and (state.wanted > progress.ordinal or not state.enabled
                                 or current != progress.ordinal + 1):
        bookie_id = _bookie_id(state, progress.ordinal)
        return Outcome(
            (SetReadOnly(progress.ordinal, bookie_id, False),), None,
            conditions.Condition(CONDITION, False, "Cancelled", f"bookie {progress.ordinal} kept"),
            (report.Event(report.NORMAL, "DecommissionCancelled",
                          f"spec.bookkeeper.replicas={state.wanted}: bookie {progress.ordinal} stays and is "
                          "writable again"),),
        )
    if progress is not None:
        return _drain(state, progress, current)
    if state.wanted >= current:
        return _idle(f"{current} bookies, as the spec asks")
    return _start(state, current)
