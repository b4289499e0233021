"""Function (ours or function-mesh's) -> ConfigMap, headless Service, StatefulSet of instances, HPA.

Pure: takes the custom resource, the observed StatefulSet, the image and
where the cluster's brokers are, and decides. Each pod runs one instance,
`pulsar function-instance --config /pulsar/conf/function.json`, whose id is
the pod's ordinal ($POD_NAME). The StatefulSet always has spec.replicas;
with maxReplicas set, an autoscaling/v2 HPA scales the Function itself
through its scale subresource, so `kubectl scale`, the HPA and the
StatefulSet never disagree about who owns the count.
"""

from __future__ import annotations

import json
from typing import Any

from pulsar_operator import conditions, function_spec, naming, plan, workloads

METRICS_PORT = 9094
CONF_DIR = "/pulsar/conf"
#: Where an instance keeps code it downloads (pyLocation); an emptyDir.
WORK_DIR = "/pulsar/work"
CONTAINER = "pulsar-function"
#: The HPA's target when the spec names no metric: function-mesh's default.
DEFAULT_CPU_UTILIZATION = 80
LIVENESS_KEYS = ("initialDelaySeconds", "periodSeconds", "timeoutSeconds", "failureThreshold")
CLUSTER_NOT_READY = "ClusterNotReady"
#: A package URL in pyLocation and no web service URL to download it from.
NO_WEB_SERVICE_URL = "NoWebServiceURL"
#: Where the Secrets of spec.pulsar (broker credentials and TLS trust) are mounted: files the
#: instance reads, so no credential is on its command line or in its environment.
AUTH_SECRET_DIR = "/pulsar/client-auth"
TLS_SECRET_DIR = "/pulsar/client-tls"
TLS_CA_DIR = "/pulsar/client-tls-ca"


def child_name(body: dict[str, Any]) -> str:
    return naming.child_name((body.get("metadata") or {}).get("name", ""), naming.FUNCTION)


def _command(spec: dict[str, Any]) -> list[str]:
    command = ["pulsar", "function-instance", "--config", f"{CONF_DIR}/function.json",
               "--metrics-host", "$(POD_IP)", "--metrics-port", str(METRICS_PORT), "--work-dir", WORK_DIR]
    if spec.get("clusterName"):
        command += ["--cluster-name", str(spec["clusterName"])]
    if (spec.get("pulsar") or {}).get("pulsarConfig"):
        # The ConfigMap's keys are the container's environment; Kubernetes expands $(VAR) from it.
        command += ["--service-url", "$(brokerServiceURL)"]
    return command + _client_flags(spec.get("pulsar") or {})


def _client_flags(pulsar: dict[str, Any]) -> list[str]:
    """How the instance finds its broker credentials and TLS trust (never the values)."""
    flags = []
    if pulsar.get("authSecret"):
        flags += ["--client-auth-dir", AUTH_SECRET_DIR]
    if pulsar.get("tlsSecret"):
        flags += ["--client-tls-dir", TLS_SECRET_DIR]
    tls = pulsar.get("tlsConfig") or {}
    if tls.get("enabled"):
        if tls.get("certSecretName"):
            flags += ["--tls-trust-certs-file", f"{TLS_CA_DIR}/{tls['certSecretKey']}"]
        if tls.get("allowInsecure"):
            flags.append("--tls-allow-insecure")
        if tls.get("hostnameVerification") is not None:
            flags += ["--tls-hostname-verification", str(bool(tls["hostnameVerification"])).lower()]
    return flags


def _client_secrets(pulsar: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(volume name, Secret name, mount path) of the Secrets spec.pulsar names."""
    tls = pulsar.get("tlsConfig") or {}
    wanted = [("pulsar-auth", pulsar.get("authSecret"), AUTH_SECRET_DIR),
              ("pulsar-tls", pulsar.get("tlsSecret"), TLS_SECRET_DIR),
              ("pulsar-tls-ca", tls.get("certSecretName") if tls.get("enabled") else None, TLS_CA_DIR)]
    return [(volume, str(secret), path) for volume, secret, path in wanted if secret]


def _liveness(pod: dict[str, Any]) -> dict[str, Any]:
    probe = workloads.http_probe("/healthz", METRICS_PORT, initial_delay_s=30)
    probe.update({key: value for key, value in (pod.get("liveness") or {}).items() if key in LIVENESS_KEYS})
    return probe


def _container(spec: dict[str, Any], image: str) -> dict[str, Any]:
    pod = spec.get("pod") or {}
    env = workloads.pod_env() + [
        {"name": function_spec.secret_env_name(name),
         "valueFrom": {"secretKeyRef": {"name": ref["path"], "key": ref["key"]}}}
        for name, ref in sorted((spec.get("secretsMap") or {}).items())
    ] + list(pod.get("env") or [])
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": spec.get("image") or image,
        "command": _command(spec),
        "env": env,
        "ports": workloads.container_ports({"metrics": METRICS_PORT}),
        "readinessProbe": workloads.http_probe("/healthz", METRICS_PORT, initial_delay_s=2, period_s=5),
        "livenessProbe": _liveness(pod),
        "volumeMounts": [{"name": "config", "mountPath": CONF_DIR, "readOnly": True},
                         {"name": "work", "mountPath": WORK_DIR}]
        + [{"name": volume, "mountPath": path, "readOnly": True}
           for volume, _, path in _client_secrets(spec.get("pulsar") or {})]
        + list(spec.get("volumeMounts") or []),
    }
    if spec.get("imagePullPolicy"):
        container["imagePullPolicy"] = spec["imagePullPolicy"]
    if (spec.get("pulsar") or {}).get("pulsarConfig"):
        container["envFrom"] = [{"configMapRef": {"name": spec["pulsar"]["pulsarConfig"]}}]
    if res := workloads.resources_of(spec.get("resources") or {}):
        container["resources"] = res
    return container


def _pod_spec(spec: dict[str, Any], container: dict[str, Any], name: str,
              selector: dict[str, str]) -> dict[str, Any]:
    pod = spec.get("pod") or {}
    volumes = [{"name": "config", "configMap": {"name": name}}, {"name": "work", "emptyDir": {}}]
    volumes += [{"name": volume, "secret": {"secretName": secret, "defaultMode": 0o400}}
                for volume, secret, _ in _client_secrets(spec.get("pulsar") or {})]
    result = workloads.pod_spec([container, *(pod.get("sidecars") or [])], pod, selector,
                                volumes=volumes + list(pod.get("volumes") or []))
    for key in ("initContainers", "imagePullSecrets", "terminationGracePeriodSeconds"):
        if pod.get(key) is not None:
            result[key] = pod[key]
    return result


def _hpa_metrics(pod: dict[str, Any]) -> list[dict[str, Any]]:
    if pod.get("autoScalingMetrics"):
        return list(pod["autoScalingMetrics"])
    metrics = []
    for entry in pod.get("builtinAutoscaler") or []:
        if match := function_spec.BUILTIN_AUTOSCALER.match(str(entry)):
            metrics.append(_utilization(match.group(1).lower(), int(match.group(2))))
    return metrics or [_utilization("cpu", DEFAULT_CPU_UTILIZATION)]


def _utilization(resource: str, percent: int) -> dict[str, Any]:
    return {"type": "Resource",
            "resource": {"name": resource, "target": {"type": "Utilization", "averageUtilization": percent}}}


def autoscaler(body: dict[str, Any], name: str) -> dict[str, Any]:
    """An HPA that scales the Function (its scale subresource) between minReplicas (default 1) and maxReplicas."""
    spec = function_spec.spec_of(body)
    pod = spec.get("pod") or {}
    maximum = int(spec["maxReplicas"])
    hpa_spec: dict[str, Any] = {
        "scaleTargetRef": {"apiVersion": body.get("apiVersion") or naming.API_VERSION, "kind": "Function",
                           "name": (body.get("metadata") or {}).get("name", "")},
        "minReplicas": min(int(spec.get("minReplicas") or 1), maximum),
        "maxReplicas": maximum,
        "metrics": _hpa_metrics(pod),
    }
    if pod.get("autoScalingBehavior"):
        hpa_spec["behavior"] = pod["autoScalingBehavior"]
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": naming.child_metadata(body, name, naming.FUNCTION), "spec": hpa_spec}


def desired_objects(
    body: dict[str, Any], image: str, broker_service_url: str | None, web_service_url: str | None = None
) -> tuple[list[dict[str, Any]], list[plan.ObjectRef]]:
    spec = function_spec.spec_of(body)
    meta = body.get("metadata") or {}
    name = child_name(body)
    namespace = meta.get("namespace") or "default"
    instance = meta.get("name", "")
    selector = naming.selector_labels(instance, naming.FUNCTION)
    conf_text = json.dumps(function_spec.function_config(body, broker_service_url, web_service_url),
                           indent=2, sort_keys=True)
    container = _container(spec, image)
    pod_labels = {**((spec.get("pod") or {}).get("labels") or {}), **naming.labels(instance, naming.FUNCTION)}
    pod_annotations = {**((spec.get("pod") or {}).get("annotations") or {}),
                       workloads.CONFIG_HASH_ANNOTATION: workloads.config_hash(conf_text)}
    objects = [
        workloads.config_map(naming.child_metadata(body, name, naming.FUNCTION), {"function.json": conf_text}),
        workloads.service(naming.child_metadata(body, name, naming.FUNCTION), selector,
                          {"metrics": METRICS_PORT}, headless=True),
        workloads.stateful_set(
            naming.child_metadata(body, name, naming.FUNCTION, container["image"]),
            replicas=int(spec.get("replicas", 1)), selector=selector, service_name=name,
            pod_labels=pod_labels, pod_annotations=pod_annotations,
            spec=_pod_spec(spec, container, name, selector), parallel=True,
        ),
    ]
    deletions = []
    if spec.get("maxReplicas") is not None:
        objects.append(autoscaler(body, name))
    else:
        deletions.append(plan.ObjectRef("autoscaling/v2", "HorizontalPodAutoscaler", namespace, name))
    return objects, deletions


def _instance_conditions(wanted: int, replicas: int, ready: int) -> list[conditions.Condition]:
    message = f"{ready}/{wanted} instances ready"
    if ready >= wanted and replicas == wanted:
        return conditions.ready(message if wanted else "stopped (replicas: 0)")
    return [conditions.Condition(conditions.READY, False, "InstancesNotReady", message),
            conditions.Condition(conditions.PROGRESSING, True, "InstancesNotReady", message),
            conditions.Condition(conditions.DEGRADED, False, "AsExpected", "")]


def reconcile(
    body: dict[str, Any],
    observed_sts: dict[str, Any] | None,
    *,
    image: str,
    cluster_status: dict[str, Any] | None,
    now: str,
    pulsar_config: dict[str, Any] | None = None,
) -> plan.Plan:
    """`cluster_status`: the status of spec.clusterRef's PulsarCluster when the spec names one (None if missing).
    `pulsar_config`: the data of spec.pulsar.pulsarConfig's ConfigMap, read only when the code is a
    package URL (its webServiceURL is where the instances download it; None if missing)."""
    meta = body.get("metadata") or {}
    spec = function_spec.spec_of(body)
    old = body.get("status") or {}
    generation = meta.get("generation")
    ignored = [field.as_status() for field in function_spec.ignored_fields(body)]
    status: dict[str, Any] = {
        "observedGeneration": generation,
        "selector": naming.selector_string(naming.selector_labels(meta.get("name", ""), naming.FUNCTION)),
        "ignoredFields": ignored or None,
    }
    sts_status = (observed_sts or {}).get("status") or {}
    status["replicas"] = int(sts_status.get("replicas") or 0)
    status["readyReplicas"] = int(sts_status.get("readyReplicas") or 0)

    def finish(conds: list[conditions.Condition], **kwargs: Any) -> plan.Plan:
        status["conditions"] = conditions.merge(old.get("conditions"), conds, now, generation)
        return plan.Plan(status=status, **kwargs)

    if problems := function_spec.validate(body):
        return finish(conditions.invalid_spec(problems))
    broker_url = web_url = None
    config_map = (spec.get("pulsar") or {}).get("pulsarConfig")
    if not config_map:
        broker_url = (cluster_status or {}).get("brokerServiceURL")
        web_url = (cluster_status or {}).get("webServiceURL")
        if not broker_url or (function_spec.needs_web_service_url(body) and not web_url):
            ref = (spec.get("clusterRef") or {}).get("name")
            missing = "brokerServiceURL" if not broker_url else "webServiceURL"
            return finish(conditions.failed(CLUSTER_NOT_READY, f"PulsarCluster {ref} has no {missing} yet"))
    elif function_spec.needs_web_service_url(body):
        web_url = (pulsar_config or {}).get("webServiceURL")
        if not web_url:
            return finish(conditions.failed(
                NO_WEB_SERVICE_URL, f"ConfigMap {config_map} (spec.pulsar.pulsarConfig) has no webServiceURL, "
                "where the instances download spec.python.pyLocation"))
    objects, deletions = desired_objects(body, image, broker_url, web_url)
    wanted = int(spec.get("replicas", 1))
    return finish(_instance_conditions(wanted, status["replicas"], status["readyReplicas"]),
                  objects=tuple(objects), deletions=tuple(deletions))
