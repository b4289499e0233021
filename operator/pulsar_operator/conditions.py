"""Status conditions (Ready, Progressing, Degraded) with stable transition times.

`lastTransitionTime` changes only when a condition's status flips, as the
Kubernetes API conventions ask; the caller injects `now` so this stays pure.
"""

from __future__ import annotations

import dataclasses
from typing import Any

READY = "Ready"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"


@dataclasses.dataclass(frozen=True)
class Condition:
    type: str
    status: bool
    reason: str
    message: str = ""


def merge(
    old: list[dict[str, Any]] | None,
    new: list[Condition],
    now: str,
    generation: int | None,
) -> list[dict[str, Any]]:
    """New condition dicts, keeping lastTransitionTime of those whose status did not change."""
    previous = {c.get("type"): c for c in old or [] if isinstance(c, dict)}
    result = []
    for cond in new:
        status = "True" if cond.status else "False"
        before = previous.get(cond.type, {})
        changed = before.get("status") != status
        entry: dict[str, Any] = {
            "type": cond.type,
            "status": status,
            "reason": cond.reason,
            "message": cond.message,
            "lastTransitionTime": now if changed or not before.get("lastTransitionTime") else before["lastTransitionTime"],
        }
        if generation is not None:
            entry["observedGeneration"] = generation
        result.append(entry)
    return result


def invalid_spec(problems: list[str]) -> list[Condition]:
    message = "; ".join(problems)
    return [
        Condition(READY, False, "InvalidSpec", message),
        Condition(PROGRESSING, False, "InvalidSpec", "nothing is changed until the spec is fixed"),
        Condition(DEGRADED, True, "InvalidSpec", message),
    ]


def failed(reason: str, message: str) -> list[Condition]:
    return [
        Condition(READY, False, reason, message),
        Condition(PROGRESSING, True, reason, "retrying"),
        Condition(DEGRADED, True, reason, message),
    ]


def ready(message: str = "") -> list[Condition]:
    return [
        Condition(READY, True, "Reconciled", message),
        Condition(PROGRESSING, False, "Reconciled", ""),
        Condition(DEGRADED, False, "Reconciled", ""),
    ]


def by_type(conditions: list[dict[str, Any]], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)
