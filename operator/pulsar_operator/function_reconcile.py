"""Function (ours or function-mesh's) -> the status it gets while no function runtime exists.

Both API groups carry the same spec shape, so one pure reconciler serves
both. This release has no function runtime (`pulsar function-instance` and
the functions worker come later), so a Function runs nothing: the operator
checks its spec, creates no children, and reports Ready=False with reason
FunctionRuntimeNotAvailable, so that nobody waits for instances that will
never start.
"""

from __future__ import annotations

from typing import Any

from pulsar_operator import conditions, plan

GUARANTEES = ("ATLEAST_ONCE", "ATMOST_ONCE", "EFFECTIVELY_ONCE", "MANUAL")
RUNTIME_NOT_AVAILABLE = "FunctionRuntimeNotAvailable"
RUNTIME_NOT_AVAILABLE_MESSAGE = (
    "this release of pulsar-py has no function runtime (`pulsar function-instance` and the functions "
    "worker come in a later release); nothing runs for this Function"
)


def validate(body: dict[str, Any]) -> list[str]:
    spec = body.get("spec") or {}
    problems = []
    if not spec.get("className"):
        problems.append("spec.className is required")
    inputs = spec.get("input") or {}
    if not inputs.get("topics") and not inputs.get("topicPattern"):
        problems.append("spec.input.topics or spec.input.topicPattern is required")
    python = spec.get("python") or {}
    if not python.get("py") and not python.get("pyLocation"):
        runtime = "java" if spec.get("java") else "golang" if spec.get("golang") else None
        problems.append(f"only Python functions are supported; spec.{runtime} was given" if runtime
                        else "spec.python.py or spec.python.pyLocation is required")
    guarantee = str(spec.get("processingGuarantee") or "atleast_once").upper()
    if guarantee not in GUARANTEES:
        problems.append(f"spec.processingGuarantee must be one of {', '.join(g.lower() for g in GUARANTEES)}")
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    if high is not None and int(high) < 1:
        problems.append("spec.maxReplicas must be >= 1")
    if low is not None and high is not None and int(low) > int(high):
        problems.append(f"spec.minReplicas ({low}) must be <= spec.maxReplicas ({high})")
    if int(spec.get("replicas", 1)) < 0:
        problems.append("spec.replicas must be >= 0")
    return problems


def runtime_not_available() -> list[conditions.Condition]:
    return [
        conditions.Condition(conditions.READY, False, RUNTIME_NOT_AVAILABLE, RUNTIME_NOT_AVAILABLE_MESSAGE),
        conditions.Condition(conditions.PROGRESSING, False, RUNTIME_NOT_AVAILABLE,
                             "nothing changes until an operator release with a function runtime runs"),
        conditions.Condition(conditions.DEGRADED, True, RUNTIME_NOT_AVAILABLE, RUNTIME_NOT_AVAILABLE_MESSAGE),
    ]


def reconcile(body: dict[str, Any], now: str) -> plan.Plan:
    """No children, whatever the spec; the status says why (an invalid spec first)."""
    generation = (body.get("metadata") or {}).get("generation")
    old = body.get("status") or {}
    problems = validate(body)
    conds = conditions.invalid_spec(problems) if problems else runtime_not_available()
    return plan.Plan(status={
        "observedGeneration": generation,
        "conditions": conditions.merge(old.get("conditions"), conds, now, generation),
        "replicas": 0,
        "readyReplicas": 0,
    })
