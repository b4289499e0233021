"""The autorecovery planner: pause during rollouts, lost bookies, recovery reports, and the
replacement of a bookie whose volume was lost; checked step by step and against a seeded
sequence of observations."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st
from pulsar_operator.loops import autorecovery as ar

NOW = 5_000_000


def bookie(ordinal: int, **changes: object) -> ar.Bookie:
    base = ar.Bookie(ordinal, f"b{ordinal}:3181", pod_exists=True, pod_ready=True, registered=True, ledgers=None)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


KNOWN = ar.Progress(known=tuple(f"b{i}:3181" for i in range(3)))


def state(**changes: object) -> ar.State:
    base = ar.State(enabled=True, delay_s=60, rolling=False, bookies=[bookie(i) for i in range(3)],
                    under_replicated=0, current_delay_s=60, progress=KNOWN, now_ms=NOW)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_a_settled_cluster_needs_nothing() -> None:
    out = ar.plan(state())
    assert out.actions == () and out.events == ()
    assert (out.condition.status, out.condition.reason) == (False, "Idle")


def test_the_spec_delay_is_applied_and_an_unreachable_api_is_left_alone() -> None:
    assert ar.plan(state(current_delay_s=0)).actions == (ar.SetRecoveryDelay(60),)
    assert ar.plan(state(current_delay_s=None, under_replicated=None)).actions == ()
    assert ar.plan(state(current_delay_s=None, under_replicated=None)).condition.reason == "Unknown"


def test_a_rollout_pauses_recovery_and_its_end_restores_the_delay() -> None:
    paused = ar.plan(state(rolling=True))
    assert paused.actions == (ar.SetRecoveryDelay(ar.ROLLING_PAUSE_DELAY_S),)
    assert paused.progress.paused and [e.reason for e in paused.events] == ["RecoveryPaused"]
    assert paused.condition.reason == "PausedForRollout"
    again = ar.plan(state(rolling=True, progress=paused.progress, current_delay_s=ar.ROLLING_PAUSE_DELAY_S))
    assert again.actions == () and again.events == ()
    resumed = ar.plan(state(progress=paused.progress, current_delay_s=ar.ROLLING_PAUSE_DELAY_S))
    assert resumed.actions == (ar.SetRecoveryDelay(60),)
    assert not resumed.progress.paused and [e.reason for e in resumed.events] == ["RecoveryResumed"]


def test_a_lost_bookie_and_its_recovery_are_reported_with_the_time_it_took() -> None:
    lost = [bookie(0), bookie(1), bookie(2, pod_ready=False, registered=False)]
    first = ar.plan(state(bookies=lost, under_replicated=4))
    assert [e.reason for e in first.events] == ["BookieLost", "RecoveryStarted"]
    assert first.progress.lost == ("b2:3181",) and first.progress.recovering_since_ms == NOW
    assert first.condition.reason == "Recovering"
    done = ar.plan(state(bookies=lost, under_replicated=0, progress=first.progress, now_ms=NOW + 12_500))
    assert [e.reason for e in done.events] == ["RecoveryCompleted"]
    assert done.progress.recoveries == 1 and done.progress.last_recovery_s == 12.5
    back = ar.plan(state(progress=done.progress, now_ms=NOW + 20_000))
    assert [e.reason for e in back.events] == ["BookieBack"] and back.progress.lost == ()


def test_a_bookie_whose_volume_was_lost_is_forgotten_once_nothing_needs_it() -> None:
    crashing = [bookie(0), bookie(1), bookie(2, pod_ready=False, registered=False, ledgers=3)]
    first = ar.plan(state(bookies=crashing, under_replicated=3))
    assert first.actions == ()
    drained = [bookie(0), bookie(1), bookie(2, pod_ready=False, registered=False, ledgers=0)]
    out = ar.plan(state(bookies=drained, progress=first.progress))
    assert out.actions == (ar.ForgetBookie(2, "b2:3181"),)
    assert out.progress.replaced == 1 and out.progress.replacing == ("b2:3181",)
    # Asked once: the pod restarts on its own and registers as a new bookie.
    assert ar.plan(state(bookies=drained, progress=out.progress)).actions == ()
    assert ar.plan(state(progress=out.progress)).progress.replacing == ()


def test_nothing_is_forgotten_while_ledgers_are_under_replicated_or_during_a_rollout() -> None:
    drained = [bookie(0), bookie(1), bookie(2, pod_ready=False, registered=False, ledgers=0)]
    progress = dataclasses.replace(KNOWN, lost=("b2:3181",))
    assert ar.plan(state(bookies=drained, progress=progress, under_replicated=1)).actions == ()
    assert not any(isinstance(a, ar.ForgetBookie)
                   for a in ar.plan(state(bookies=drained, progress=progress, rolling=True)).actions)


def test_a_bookie_never_registered_yet_is_starting_not_lost() -> None:
    starting = [bookie(0), bookie(1), bookie(2, pod_ready=False, registered=False)]
    out = ar.plan(state(bookies=starting, progress=ar.Progress(known=("b0:3181", "b1:3181"))))
    assert out.progress.lost == () and out.events == ()
    assert ar.plan(state(progress=out.progress)).progress.known == KNOWN.known


def test_disabled_autorecovery_does_nothing_and_says_so() -> None:
    out = ar.plan(state(enabled=False, rolling=True, under_replicated=3))
    assert out.actions == () and out.condition.reason == "Disabled"


observation = st.fixed_dictionaries({
    "rolling": st.booleans(),
    "under": st.one_of(st.none(), st.integers(0, 5)),
    "down": st.sets(st.integers(0, 2)),
    "ledgers": st.one_of(st.none(), st.integers(0, 2)),
})


@settings(max_examples=200, deadline=None)
@given(st.lists(observation, min_size=1, max_size=30))
def test_over_any_sequence_forgets_are_safe_and_the_delay_follows_the_rollout(steps: list[dict[str, object]]) -> None:
    progress, delay, now = KNOWN, 60, NOW
    for seen in steps:
        down = seen["down"]
        assert isinstance(down, set)
        bookies = [bookie(i, pod_ready=i not in down, registered=i not in down,
                          ledgers=seen["ledgers"] if i in down else None) for i in range(3)]
        s = state(rolling=seen["rolling"], under_replicated=seen["under"], bookies=bookies, progress=progress,
                  current_delay_s=delay, now_ms=now)
        out = ar.plan(s)
        for action in out.actions:
            if isinstance(action, ar.ForgetBookie):
                forgotten = next(b for b in bookies if b.ordinal == action.ordinal)
                assert forgotten.ledgers == 0 and not forgotten.registered and s.under_replicated == 0
                assert not s.rolling
            else:
                delay = action.seconds
        assert delay == (ar.ROLLING_PAUSE_DELAY_S if s.rolling else 60)
        assert out.progress.recovering_since_ms is None or out.progress.recovering_since_ms <= now
        progress, now = out.progress, now + 1000
