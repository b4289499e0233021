"""Function (ours and function-mesh's) -> ConfigMap, StatefulSet, Service, HPA (pure reconcile)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest
from pulsar_operator import function_reconcile, naming

NOW = "2026-01-01T00:00:00Z"
IMAGE = "pulsar-py:test"
K8S_VERSION = "1.37.0"
Example = Callable[[str], dict[str, Any]]


def function(example: Example, **changes: Any) -> dict[str, Any]:
    body = example("function.yaml")
    for key, value in changes.items():
        if value is None:
            body["spec"].pop(key, None)
        else:
            body["spec"][key] = value
    return body


def reconcile(body: dict[str, Any], observed: dict[str, Any] | None = None, hpa_exists: bool = False,
              urls: dict[str, str] | None = None) -> Any:
    return function_reconcile.reconcile(body, observed, image=IMAGE, service_urls=urls, hpa_exists=hpa_exists, now=NOW)


def by_kind(plan: Any, kind: str) -> dict[str, Any]:
    return next(o for o in plan.objects if o["kind"] == kind)


def test_function_mesh_yaml_becomes_instances_config_service_and_hpa(example: Example) -> None:
    plan = reconcile(function(example))
    assert {(o["kind"], o["metadata"]["name"]) for o in plan.objects} == {
        ("ConfigMap", "exclamation-function"), ("Service", "exclamation-function"),
        ("StatefulSet", "exclamation-function"), ("HorizontalPodAutoscaler", "exclamation-function")}
    for obj in plan.objects:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        assert obj["metadata"]["ownerReferences"][0]["apiVersion"] == naming.FUNCTION_MESH_API_VERSION
        assert obj["metadata"]["ownerReferences"][0]["kind"] == "Function"
    assert by_kind(plan, "Service")["spec"]["clusterIP"] == "None"


def test_our_own_function_kind_is_reconciled_the_same_way(example: Example) -> None:
    body = function(example)
    body["apiVersion"] = naming.API_VERSION
    plan = reconcile(body)
    assert {o["kind"] for o in plan.objects} == {"ConfigMap", "Service", "StatefulSet", "HorizontalPodAutoscaler"}
    assert by_kind(plan, "StatefulSet")["metadata"]["ownerReferences"][0]["apiVersion"] == naming.API_VERSION


def test_function_json_carries_the_spec(example: Example) -> None:
    plan = reconcile(function(example, funcConfig={"suffix": "!"}))
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert config == {
        "tenant": "public", "namespace": "default", "name": "exclamation",
        "className": "exclamation_function.ExclamationFunction", "runtime": "PYTHON",
        "py": "/pulsar/examples/exclamation_function.py",
        "inputs": ["persistent://public/default/in"], "output": "persistent://public/default/out",
        "logTopic": "persistent://public/default/exclamation-logs", "processingGuarantee": "ATLEAST_ONCE",
        "subscriptionName": "exclamation-sub", "subscriptionPosition": "latest", "autoAck": True,
        "maxMessageRetries": 3, "deadLetterTopic": "persistent://public/default/exclamation-dlq",
        "retainOrdering": False, "cleanupSubscription": False, "userConfig": {"suffix": "!"},
        "secretsMap": {"apiToken": "PULSAR_SECRET_APITOKEN"}, "parallelism": 1,
    }


def test_instances_run_the_function_instance_command_with_secrets_and_pulsar_config(example: Example) -> None:
    sts = by_kind(reconcile(function(example)), "StatefulSet")
    container = sts["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["pulsar", "function-instance", "--config", "/pulsar/conf/function.json"]
    assert container["image"] == IMAGE
    assert container["readinessProbe"]["httpGet"] == {"path": "/healthz", "port": 9094}
    assert {"name": "PULSAR_SECRET_APITOKEN",
            "valueFrom": {"secretKeyRef": {"name": "exclamation-secrets", "key": "token"}}} in container["env"]
    assert container["envFrom"] == [{"configMapRef": {"name": "pulsar-mini-service-urls"}}]
    assert container["resources"] == {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "256Mi"}}


def test_service_urls_of_a_referenced_cluster_go_into_function_json(example: Example) -> None:
    body = function(example, pulsar=None, clusterRef={"name": "pulsar-mini"})
    urls = {"brokerServiceURL": "pulsar://b:6650", "webServiceURL": "http://b:8080"}
    config = json.loads(by_kind(reconcile(body, urls=urls), "ConfigMap")["data"]["function.json"])
    assert (config["brokerServiceUrl"], config["webServiceUrl"]) == ("pulsar://b:6650", "http://b:8080")


@pytest.mark.parametrize(("changes", "minimum", "maximum"), [
    ({"maxReplicas": 3}, 1, 3),
    ({"maxReplicas": 5, "minReplicas": 2}, 2, 5),
    ({"maxReplicas": 4, "replicas": 2}, 2, 4),
])
def test_an_hpa_scales_between_min_and_max(example: Example, changes: dict[str, Any], minimum: int,
                                           maximum: int) -> None:
    hpa = by_kind(reconcile(function(example, **changes)), "HorizontalPodAutoscaler")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (minimum, maximum)
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "StatefulSet",
                                             "name": "exclamation-function"}


def test_without_max_replicas_the_hpa_is_deleted_and_replicas_are_ours(example: Example) -> None:
    plan = reconcile(function(example, maxReplicas=None, replicas=2))
    assert "HorizontalPodAutoscaler" not in {o["kind"] for o in plan.objects}
    assert [(r.kind, r.name) for r in plan.deletions] == [("HorizontalPodAutoscaler", "exclamation-function")]
    assert by_kind(plan, "StatefulSet")["spec"]["replicas"] == 2


def test_while_an_hpa_exists_the_statefulset_replica_count_is_left_to_it(example: Example) -> None:
    assert "replicas" in by_kind(reconcile(function(example), hpa_exists=False), "StatefulSet")["spec"]
    assert "replicas" not in by_kind(reconcile(function(example), hpa_exists=True), "StatefulSet")["spec"]


def test_status_follows_the_statefulset(example: Example) -> None:
    observed = {"spec": {"replicas": 2}, "status": {"replicas": 2, "readyReplicas": 2}}
    status = reconcile(function(example), observed).status
    assert (status["replicas"], status["readyReplicas"]) == (2, 2)
    assert status["conditions"][0]["type"] == "Ready" and status["conditions"][0]["status"] == "True"
    assert status["selector"] == ("app.kubernetes.io/component=function,app.kubernetes.io/instance=exclamation,"
                                  "app.kubernetes.io/name=pulsar")
    waiting = reconcile(function(example), {"spec": {"replicas": 2}, "status": {"readyReplicas": 1}}).status
    assert waiting["conditions"][0]["status"] == "False" and waiting["conditions"][0]["message"] == "1/2 instances ready"


@pytest.mark.parametrize(("changes", "message"), [
    ({"className": None}, "spec.className is required"),
    ({"input": {"topics": []}}, "spec.input.topics or spec.input.topicPattern is required"),
    ({"python": None, "java": {"jar": "x.jar"}}, "only Python functions are supported; spec.java was given"),
    ({"processingGuarantee": "exactly_twice"}, "spec.processingGuarantee must be one of"),
    ({"minReplicas": 4, "maxReplicas": 2}, "spec.minReplicas (4) must be <= spec.maxReplicas (2)"),
])
def test_an_invalid_function_is_reported_and_changes_nothing(example: Example, changes: dict[str, Any],
                                                             message: str) -> None:
    plan = reconcile(function(example, **changes))
    assert plan.objects == () and plan.deletions == ()
    degraded = next(c for c in plan.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "InvalidSpec" and message in degraded["message"]


def test_a_topic_pattern_alone_is_a_valid_input(example: Example) -> None:
    plan = reconcile(function(example, input={"topicPattern": "persistent://public/default/in-.*"}))
    config = json.loads(by_kind(plan, "ConfigMap")["data"]["function.json"])
    assert config["topicsPattern"] == "persistent://public/default/in-.*" and config["inputs"] == []
