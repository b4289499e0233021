"""The checker of a chaos run: pure functions over what the workload was told and what the
topics hold at the end. No I/O, so each rule is testable on its own.

Rules (each a count the report prints and the run must keep at 0 where it says so):

- lost: a value acknowledged to a producer that no read of the topic returns (must be 0);
- duplicates: a value stored more than once (must be 0 on topics with deduplication;
  without it, an application's retry of a send whose receipt was lost is stored again,
  as in Apache Pulsar);
- order violations: for one key, a value stored after a larger one (must be 0; a
  duplicate of the largest so far is not a violation);
- subscription regressions: a durable subscription's mark-delete position seen lower
  than it was seen before. Acknowledgements not yet persisted are legitimately lost when
  the topic's broker dies or loses the topic (Apache persists mark-delete at a bounded
  rate too), so a regression counts as a failure only when no broker was killed,
  paused or lost its metadata session in between;
- unavailability: the time in which no producer had a send acknowledged, counting gaps
  longer than ``GAP_S``.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

#: Gaps between acknowledged sends shorter than this are normal pacing, not unavailability.
GAP_S = 1.0


@dataclasses.dataclass(frozen=True)
class TopicFindings:
    topic: str
    deduplication: bool
    acknowledged: int
    stored: int
    lost: int
    duplicates: int
    order_violations: int
    lost_examples: tuple[str, ...]
    unavailable_s: float = 0.0
    longest_unavailable_s: float = 0.0


@dataclasses.dataclass(frozen=True)
class Regression:
    topic: str
    subscription: str
    before: str
    after: str
    excused_by: str  # the broker fault in between, "" when there was none


def check_topic(topic: str, deduplication: bool, acked: dict[tuple[str, int], str],
                stored: list[tuple[str, int]]) -> TopicFindings:
    """acked maps each acknowledged (key, n) to the message id its receipt carried."""
    acked_set = set(acked)
    counts = Counter(stored)
    lost = sorted(acked_set - set(counts))
    duplicates = sum(n - 1 for n in counts.values() if n > 1)
    return TopicFindings(
        topic=topic, deduplication=deduplication, acknowledged=len(acked_set),
        stored=len(stored), lost=len(lost), duplicates=duplicates,
        order_violations=order_violations(stored),
        lost_examples=tuple(f"{k}:{n} (acked as {acked[(k, n)]})" for k, n in lost[:10]))


def order_violations(stored: list[tuple[str, int]]) -> int:
    """Values stored after a larger value of the same key."""
    highest: dict[str, int] = {}
    violations = 0
    for key, n in stored:
        top = highest.get(key, -1)
        if n < top:
            violations += 1
        else:
            highest[key] = n
    return violations


def parse_position(text: str) -> tuple[int, int]:
    ledger, _, entry = text.partition(":")
    return int(ledger), int(entry)


def regressions(samples: list[tuple[float, dict[tuple[str, str], str]]],
                broker_faults: list[tuple[float, float, str]]) -> list[Regression]:
    """Mark-delete positions that went down between consecutive samples of one
    subscription; each says which broker fault (start, end, description) excuses it."""
    found = []
    last: dict[tuple[str, str], tuple[float, str]] = {}
    for at_s, positions in samples:
        for where, position in positions.items():
            previous = last.get(where)
            if previous is not None and parse_position(position) < parse_position(previous[1]):
                excuse = next((what for start, end, what in broker_faults
                               if start <= at_s and end >= previous[0]), "")
                found.append(Regression(where[0], where[1], previous[1], position, excuse))
            last[where] = (at_s, position)
    return found


def unavailability(success_times: list[float], start_s: float, end_s: float) -> tuple[float, float]:
    """(total seconds without an acknowledged send in gaps over GAP_S, the longest gap)."""
    total = longest = 0.0
    previous = start_s
    for at_s in [*success_times, end_s]:
        gap = at_s - previous
        if gap > GAP_S:
            total += gap
            longest = max(longest, gap)
        previous = max(previous, at_s)
    return total, longest


def unavailability_by_kind(success_times: list[float],
                           windows: list[tuple[float, float, str]]) -> dict[str, float]:
    """Seconds without an acknowledged send (gaps over GAP_S) per fault kind, each fault's
    window running from its start to the next fault's start (a gap across two windows is
    cut at the boundary)."""
    found: dict[str, float] = {}
    for start_s, end_s, kind in windows:
        inside = [t for t in success_times if start_s <= t < end_s]
        total, _ = unavailability(inside, start_s, end_s)
        found[kind] = found.get(kind, 0.0) + total
    return found
