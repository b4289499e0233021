"""Function (ours or function-mesh's) -> ConfigMap, StatefulSet, headless Service, HPA.

Both API groups carry the same spec shape, so one pure reconciler serves
both. The function's settings go into `function.json` (read by
`pulsar function-instance`); one pod runs one instance. With maxReplicas set,
an autoscaling/v2 HPA owns the replica count, so the StatefulSet is created
with spec.replicas but later patches leave the count alone.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pulsar_operator import conditions, naming, plan, workloads

METRICS_PORT = 9094
CONF_DIR = "/pulsar/conf"
GUARANTEES = ("ATLEAST_ONCE", "ATMOST_ONCE", "EFFECTIVELY_ONCE", "MANUAL")
_ENV_NAME = re.compile(r"[^A-Za-z0-9_]")


def child_name(body: dict[str, Any]) -> str:
    return naming.child_name((body.get("metadata") or {}).get("name", ""), naming.FUNCTION)


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


def secret_env_name(name: str) -> str:
    return "PULSAR_SECRET_" + _ENV_NAME.sub("_", name).upper()


def function_config(body: dict[str, Any], service_urls: dict[str, str] | None) -> dict[str, Any]:
    """The function.json document `pulsar function-instance` reads."""
    spec = body.get("spec") or {}
    inputs = spec.get("input") or {}
    python = spec.get("python") or {}
    config: dict[str, Any] = {
        "tenant": spec.get("tenant") or "public",
        "namespace": spec.get("namespace") or "default",
        "name": spec.get("name") or (body.get("metadata") or {}).get("name"),
        "className": spec.get("className"),
        "runtime": "PYTHON",
        "py": python.get("py"),
        "pyLocation": python.get("pyLocation"),
        "inputs": list(inputs.get("topics") or []),
        "topicsPattern": inputs.get("topicPattern"),
        "output": (spec.get("output") or {}).get("topic"),
        "logTopic": spec.get("logTopic"),
        "processingGuarantee": str(spec.get("processingGuarantee") or "atleast_once").upper(),
        "subscriptionName": spec.get("subscriptionName"),
        "subscriptionPosition": (spec.get("subscriptionPosition") or "latest").lower(),
        "autoAck": bool(spec.get("autoAck", True)),
        "maxMessageRetries": spec.get("maxMessageRetry"),
        "deadLetterTopic": spec.get("deadLetterTopic"),
        "timeoutMs": spec.get("timeout"),
        "retainOrdering": bool(spec.get("retainOrdering", False)),
        "cleanupSubscription": bool(spec.get("cleanupSubscription", False)),
        "userConfig": spec.get("funcConfig") or {},
        "secretsMap": {name: secret_env_name(name) for name in sorted(spec.get("secretsMap") or {})},
        "parallelism": int(spec.get("replicas", 1)),
    }
    if service_urls:
        config["brokerServiceUrl"] = service_urls.get("brokerServiceURL")
        config["webServiceUrl"] = service_urls.get("webServiceURL")
    return {key: value for key, value in config.items() if value is not None}


def _container(body: dict[str, Any], image: str, conf_text: str) -> dict[str, Any]:
    spec = body.get("spec") or {}
    env = workloads.pod_env() + [
        {"name": secret_env_name(name), "valueFrom": {"secretKeyRef": {"name": ref["path"], "key": ref["key"]}}}
        for name, ref in sorted((spec.get("secretsMap") or {}).items())
    ]
    pulsar = spec.get("pulsar") or {}
    env_from = []
    if pulsar.get("pulsarConfig"):
        env_from.append({"configMapRef": {"name": pulsar["pulsarConfig"]}})
    if pulsar.get("authSecret"):
        env_from.append({"secretRef": {"name": pulsar["authSecret"]}})
    probe = workloads.http_probe("/healthz", METRICS_PORT, initial_delay_s=5)
    container: dict[str, Any] = {
        "name": "function",
        "image": spec.get("image") or image,
        "command": ["pulsar", "function-instance", "--config", f"{CONF_DIR}/function.json"],
        "env": env,
        "ports": workloads.container_ports({"metrics": METRICS_PORT}),
        "readinessProbe": probe,
        "livenessProbe": workloads.http_probe("/healthz", METRICS_PORT, initial_delay_s=30),
        "volumeMounts": [{"name": "config", "mountPath": CONF_DIR, "readOnly": True}],
    }
    if env_from:
        container["envFrom"] = env_from
    if res := workloads.resources_of(spec.get("resources") or {}):
        container["resources"] = res
    return container


def _hpa(body: dict[str, Any], name: str) -> dict[str, Any]:
    spec = body.get("spec") or {}
    minimum = int(spec.get("minReplicas") or max(1, int(spec.get("replicas", 1))))
    maximum = int(spec["maxReplicas"])
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": naming.child_metadata(body, name, naming.FUNCTION),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": name},
            "minReplicas": min(minimum, maximum),
            "maxReplicas": maximum,
            "metrics": [{"type": "Resource", "resource": {
                "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
        },
    }


def desired_objects(
    body: dict[str, Any], image: str, service_urls: dict[str, str] | None, hpa_exists: bool
) -> tuple[list[dict[str, Any]], list[plan.ObjectRef]]:
    spec = body.get("spec") or {}
    meta = body.get("metadata") or {}
    name = child_name(body)
    namespace = meta.get("namespace") or "default"
    selector = naming.selector_labels(meta.get("name", ""), naming.FUNCTION)
    conf_text = json.dumps(function_config(body, service_urls), indent=2, sort_keys=True)
    container = _container(body, image, conf_text)
    pod = workloads.pod_spec([container], {}, selector, volumes=[{"name": "config", "configMap": {"name": name}}])
    autoscaled = spec.get("maxReplicas") is not None
    replicas = None if autoscaled and hpa_exists else int(spec.get("replicas", 1))
    objects = [
        workloads.config_map(naming.child_metadata(body, name, naming.FUNCTION), {"function.json": conf_text}),
        workloads.service(naming.child_metadata(body, name, naming.FUNCTION), selector,
                          {"metrics": METRICS_PORT}, headless=True),
        workloads.stateful_set(
            naming.child_metadata(body, name, naming.FUNCTION, container["image"]), replicas=replicas,
            selector=selector, service_name=name,
            pod_labels=naming.labels(meta.get("name", ""), naming.FUNCTION), spec=pod,
            pod_annotations={workloads.CONFIG_HASH_ANNOTATION: workloads.config_hash(conf_text)},
            parallel=True,
        ),
    ]
    deletions = []
    if autoscaled:
        objects.append(_hpa(body, name))
    else:
        deletions.append(plan.ObjectRef("autoscaling/v2", "HorizontalPodAutoscaler", namespace, name))
    return objects, deletions


def reconcile(
    body: dict[str, Any],
    observed_sts: dict[str, Any] | None,
    *,
    image: str,
    service_urls: dict[str, str] | None,
    hpa_exists: bool,
    now: str,
) -> plan.Plan:
    meta = body.get("metadata") or {}
    old = body.get("status") or {}
    generation = meta.get("generation")
    problems = validate(body)
    if problems:
        conds = conditions.invalid_spec(problems)
        return plan.Plan(status={"observedGeneration": generation,
                                 "conditions": conditions.merge(old.get("conditions"), conds, now, generation)})
    objects, deletions = desired_objects(body, image, service_urls, hpa_exists)
    sts_status = (observed_sts or {}).get("status") or {}
    replicas = int(sts_status.get("replicas") or 0)
    ready = int(sts_status.get("readyReplicas") or 0)
    wanted = int(((observed_sts or {}).get("spec") or {}).get("replicas", (body.get("spec") or {}).get("replicas", 1)))
    if ready >= wanted:
        conds = conditions.ready(f"{ready}/{wanted} instances ready")
    else:
        message = f"{ready}/{wanted} instances ready"
        conds = [conditions.Condition(conditions.READY, False, "InstancesNotReady", message),
                 conditions.Condition(conditions.PROGRESSING, True, "InstancesNotReady", message),
                 conditions.Condition(conditions.DEGRADED, False, "AsExpected", "")]
    status = {
        "observedGeneration": generation,
        "conditions": conditions.merge(old.get("conditions"), conds, now, generation),
        "replicas": replicas,
        "readyReplicas": ready,
        "selector": naming.selector_string(naming.selector_labels(meta.get("name", ""), naming.FUNCTION)),
    }
    return plan.Plan(objects=tuple(objects), deletions=tuple(deletions), status=status)
