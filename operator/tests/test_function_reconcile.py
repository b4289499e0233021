"""Function (ours and function-mesh's) while no function runtime exists: checked, reported, nothing run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pulsar_operator import function_reconcile, naming

NOW = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:05:00Z"
Example = Callable[[str], dict[str, Any]]


def function(example: Example, **changes: Any) -> dict[str, Any]:
    body = example("function.yaml")
    for key, value in changes.items():
        if value is None:
            body["spec"].pop(key, None)
        else:
            body["spec"][key] = value
    return body


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    return next(c for c in status["conditions"] if c["type"] == kind)


@pytest.mark.parametrize("api_version", [naming.FUNCTION_MESH_API_VERSION, naming.API_VERSION])
def test_a_valid_function_runs_nothing_and_says_the_runtime_is_not_available(
    example: Example, api_version: str
) -> None:
    body = function(example)
    body["apiVersion"] = api_version
    plan = function_reconcile.reconcile(body, NOW)
    assert plan.objects == () and plan.deletions == () and plan.admin_calls == ()
    ready = condition(plan.status, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "FunctionRuntimeNotAvailable")
    assert "pulsar function-instance" in ready["message"]
    assert condition(plan.status, "Progressing")["status"] == "False"
    assert (plan.status["replicas"], plan.status["readyReplicas"]) == (0, 0)
    assert plan.status["observedGeneration"] == 1


def test_the_report_keeps_its_transition_time_across_resyncs(example: Example) -> None:
    body = function(example)
    body["status"] = function_reconcile.reconcile(body, NOW).status
    again = function_reconcile.reconcile(body, LATER).status
    assert condition(again, "Ready")["lastTransitionTime"] == NOW


@pytest.mark.parametrize(("changes", "message"), [
    ({"className": None}, "spec.className is required"),
    ({"input": {"topics": []}}, "spec.input.topics or spec.input.topicPattern is required"),
    ({"python": None, "java": {"jar": "x.jar"}}, "only Python functions are supported; spec.java was given"),
    ({"processingGuarantee": "exactly_twice"}, "spec.processingGuarantee must be one of"),
    ({"minReplicas": 4, "maxReplicas": 2}, "spec.minReplicas (4) must be <= spec.maxReplicas (2)"),
])
def test_an_invalid_function_is_reported_as_such_first(example: Example, changes: dict[str, Any],
                                                       message: str) -> None:
    plan = function_reconcile.reconcile(function(example, **changes), NOW)
    assert plan.objects == () and plan.deletions == ()
    degraded = condition(plan.status, "Degraded")
    assert degraded["reason"] == "InvalidSpec" and message in degraded["message"]


def test_a_topic_pattern_alone_is_a_valid_input(example: Example) -> None:
    body = function(example, input={"topicPattern": "persistent://public/default/in-.*"})
    assert function_reconcile.validate(body) == []
