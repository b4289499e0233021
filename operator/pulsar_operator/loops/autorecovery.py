"""Bookie autorecovery, watched and steered: what to report and which knob to turn next.

The bookies' own auditor and replication workers re-replicate the ledgers of a lost
bookie (BookKeeper's design, services/bookie); this loop does what only something that
sees the pods can do:

- pause recovery while the bookie StatefulSet rolls (lostBookieRecoveryDelay raised to
  ROLLING_PAUSE_DELAY_S, so a pod restarted by the rollout, back in seconds, starts no
  storm of copies) and restore spec.autoRecovery.lostBookieRecoveryDelaySeconds after;
- notice bookies that are gone (registered once, not now) and their return;
- follow the under-replicated ledger count: recovery started, completed and how long it took;
- replace a bookie whose volume was lost: its pod runs but it cannot register (the
  metadata still holds the cookie of the lost disk); once no ledger names it and nothing
  is under-replicated, its cookie is forgotten and it starts again as a new, empty bookie.

Progress (status.autoRecovery) keeps what the reports need between steps.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from pulsar_operator import conditions
from pulsar_operator.loops import report

CONDITION = "AutoRecovery"
#: lostBookieRecoveryDelay while the bookie StatefulSet rolls: longer than any rollout step.
ROLLING_PAUSE_DELAY_S = 1800


@dataclasses.dataclass(frozen=True)
class Bookie:
    ordinal: int
    bookie_id: str
    pod_exists: bool
    pod_ready: bool
    registered: bool
    #: Ledgers whose ensembles still name this bookie (None: unknown).
    ledgers: int | None = None


@dataclasses.dataclass(frozen=True)
class Progress:
    """status.autoRecovery, as the loop needs it between steps."""

    paused: bool = False
    lost: tuple[str, ...] = ()
    recovering_since_ms: int | None = None
    recoveries: int = 0
    last_recovery_s: float | None = None
    replaced: int = 0
    #: Bookies whose cookie was forgotten, until they register again.
    replacing: tuple[str, ...] = ()
    #: Bookies seen registered once: only those can be lost (a new bookie still starting is not).
    known: tuple[str, ...] = ()

    def to_status(self, under_replicated: int | None, delay_s: int | None) -> dict[str, Any]:
        return {
            "pausedForRollout": self.paused,
            "lostBookies": list(self.lost),
            "underReplicatedLedgers": under_replicated,
            "lostBookieRecoveryDelaySeconds": delay_s,
            "recoveringSinceMs": self.recovering_since_ms,
            "recoveriesCompleted": self.recoveries,
            "lastRecoverySeconds": self.last_recovery_s,
            "bookiesReplaced": self.replaced,
            "replacingBookies": list(self.replacing),
            "knownBookies": list(self.known),
        }

    @staticmethod
    def of(raw: Any) -> Progress:
        if not isinstance(raw, Mapping):
            return Progress()
        since = raw.get("recoveringSinceMs")
        last = raw.get("lastRecoverySeconds")
        return Progress(
            paused=bool(raw.get("pausedForRollout")),
            lost=tuple(str(b) for b in raw.get("lostBookies") or ()),
            recovering_since_ms=int(since) if since is not None else None,
            recoveries=int(raw.get("recoveriesCompleted") or 0),
            last_recovery_s=float(last) if last is not None else None,
            replaced=int(raw.get("bookiesReplaced") or 0),
            replacing=tuple(str(b) for b in raw.get("replacingBookies") or ()),
            known=tuple(str(b) for b in raw.get("knownBookies") or ()),
        )


@dataclasses.dataclass(frozen=True)
class State:
    enabled: bool
    delay_s: int
    #: The bookie StatefulSet is rolling its pods (updated replicas behind, or revisions differ).
    rolling: bool
    bookies: Sequence[Bookie]
    under_replicated: int | None
    #: lostBookieRecoveryDelay the cluster uses now (None: unknown).
    current_delay_s: int | None
    progress: Progress
    now_ms: int


@dataclasses.dataclass(frozen=True)
class SetRecoveryDelay:
    seconds: int


@dataclasses.dataclass(frozen=True)
class ForgetBookie:
    """Remove the cookie of a bookie that lost its volume, so its pod starts as a new bookie."""

    ordinal: int
    bookie_id: str


Action = SetRecoveryDelay | ForgetBookie


@dataclasses.dataclass(frozen=True)
class Outcome:
    actions: tuple[Action, ...]
    progress: Progress
    condition: conditions.Condition
    events: tuple[report.Event, ...] = ()


def _delay(state: State, events: list[report.Event]) -> tuple[bool, list[Action]]:
    paused = state.rolling
    if paused and not state.progress.paused:
        events.append(report.Event(report.NORMAL, "RecoveryPaused",
                                   f"bookies are rolling: lostBookieRecoveryDelay {ROLLING_PAUSE_DELAY_S} s"))
    elif state.progress.paused and not paused:
        events.append(report.Event(report.NORMAL, "RecoveryResumed",
                                   f"rollout done: lostBookieRecoveryDelay back to {state.delay_s} s"))
    target = ROLLING_PAUSE_DELAY_S if paused else state.delay_s
    # An unknown delay means the bookies' admin API did not answer: nothing to set it through.
    unset = state.current_delay_s is not None and state.current_delay_s != target
    return paused, [SetRecoveryDelay(target)] if unset else []


def _lost(state: State, events: list[report.Event]) -> tuple[str, ...]:
    lost = tuple(b.bookie_id for b in state.bookies
                 if not b.registered and not b.pod_ready and b.bookie_id in state.progress.known)
    for bookie_id in lost:
        if bookie_id not in state.progress.lost:
            events.append(report.Event(report.WARNING, "BookieLost", f"bookie {bookie_id} is not registered"))
    for bookie_id in state.progress.lost:
        if bookie_id not in lost:
            events.append(report.Event(report.NORMAL, "BookieBack", f"bookie {bookie_id} is registered again"))
    return lost


def _recovery(state: State, events: list[report.Event]) -> tuple[int | None, int, float | None]:
    since, count, last = state.progress.recovering_since_ms, state.progress.recoveries, state.progress.last_recovery_s
    if state.under_replicated and since is None:
        since = state.now_ms
        events.append(report.Event(report.NORMAL, "RecoveryStarted",
                                   f"{state.under_replicated} ledgers under-replicated; re-replicating"))
    elif state.under_replicated == 0 and since is not None:
        last = max(0, state.now_ms - since) / 1000
        count += 1
        since = None
        events.append(report.Event(report.NORMAL, "RecoveryCompleted",
                                   f"every ledger back to its write quorum in {last:.1f} s"))
    return since, count, last


def _replacements(state: State, events: list[report.Event]) -> list[Action]:
    """Bookies lost since the last step whose pod is back without registering, on which no ledger depends."""
    if state.under_replicated != 0 or state.rolling:
        return []
    result: list[Action] = []
    for bookie in state.bookies:
        if (bookie.pod_exists and not bookie.registered and bookie.ledgers == 0
                and bookie.bookie_id in state.progress.lost and bookie.bookie_id not in state.progress.replacing):
            result.append(ForgetBookie(bookie.ordinal, bookie.bookie_id))
            events.append(report.Event(report.WARNING, "BookieReplaced",
                                       f"bookie {bookie.bookie_id} cannot register (its volume was lost?) and no "
                                       "ledger needs it: its cookie is removed so it starts as a new bookie"))
    return result


def _condition(state: State, paused: bool, lost: tuple[str, ...]) -> conditions.Condition:
    if paused:
        return conditions.Condition(CONDITION, False, "PausedForRollout", "the bookie StatefulSet is rolling")
    if state.under_replicated:
        return conditions.Condition(CONDITION, True, "Recovering",
                                    f"{state.under_replicated} ledgers under-replicated; lost: {list(lost)}")
    if lost:
        return conditions.Condition(CONDITION, True, "BookiesLost",
                                    f"lost {list(lost)}; recovery starts {state.delay_s} s after a loss")
    if state.under_replicated is None:
        return conditions.Condition(CONDITION, False, "Unknown", "the bookies' admin API did not answer")
    return conditions.Condition(CONDITION, False, "Idle", "every ledger has its write quorum")


def plan(state: State) -> Outcome:
    if not state.enabled:
        return Outcome((), Progress(), conditions.Condition(
            CONDITION, False, "Disabled", "spec.autoRecovery.enabled is false: lost bookies are not re-replicated"))
    events: list[report.Event] = []
    paused, actions = _delay(state, events)
    lost = _lost(state, events)
    since, count, last = _recovery(state, events)
    actions += _replacements(state, events)
    forgotten = tuple(a.bookie_id for a in actions if isinstance(a, ForgetBookie))
    registered = {b.bookie_id for b in state.bookies if b.registered}
    replacing = tuple(b for b in state.progress.replacing if b not in registered) + forgotten
    ids = {b.bookie_id for b in state.bookies}
    known = tuple(sorted((set(state.progress.known) & ids) | registered))
    progress = Progress(paused=paused, lost=lost, recovering_since_ms=since, recoveries=count,
                        last_recovery_s=last, replaced=state.progress.replaced + len(forgotten), replacing=replacing,
                        known=known)
    return Outcome(tuple(actions), progress, _condition(state, paused, lost), tuple(events))
