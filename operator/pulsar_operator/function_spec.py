"""A Function's spec (ours or function-mesh's) read as a Pulsar function: checks, function.json, ignored fields.

Both API groups carry function-mesh's field names, so one reading serves
both. `function_config` is the function.json `pulsar function-instance`
reads; `ignored_fields` lists what the spec sets that no instance honours,
with the reason, so the status can say so instead of dropping it silently.
Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import re
import urllib.parse
from typing import Any

GUARANTEES = ("ATLEAST_ONCE", "ATMOST_ONCE", "EFFECTIVELY_ONCE", "MANUAL")
#: URL schemes `pulsar function-instance` downloads pyLocation from by itself.
DOWNLOAD_SCHEMES = ("http", "https", "file")
#: The package URL scheme of function code kept by the brokers' packages management
#: (function://tenant/namespace/name@version); the instance downloads it from webServiceUrl.
PACKAGE_SCHEME = "function"
_PACKAGE_URL = re.compile(r"^function://[^/@]+/[^/@]+/[^/@]+(@[^/@]+)?$")
_ENV_NAME = re.compile(r"[^A-Za-z0-9_]")
#: function-mesh's pod.builtinAutoscaler entries, e.g. AverageUtilizationCPUPercent80.
BUILTIN_AUTOSCALER = re.compile(r"^AverageUtilization(CPU|Memory)Percent(\d+)$")

#: Spec fields the operator uses as a whole.
USED = frozenset({
    "name", "className", "tenant", "namespace", "clusterName", "image", "imagePullPolicy", "replicas",
    "minReplicas", "maxReplicas", "logTopic", "processingGuarantee", "subscriptionName",
    "subscriptionPosition", "autoAck", "maxMessageRetry", "deadLetterTopic", "timeout", "retainOrdering",
    "funcConfig", "resources", "secretsMap", "volumeMounts", "clusterRef",
    # Read field by field below.
    "input", "output", "python", "pod", "java", "golang", "pulsar", "cleanupSubscription",
    "forwardSourceMessageProperty",
})
#: function-mesh fields accepted and not honoured, with the reason.
IGNORED = {
    "statefulConfig": "state lives in a topic of the function's namespace; no state storage service is used",
    "windowConfig": "windowed functions are not supported",
    "retainKeyOrdering": "Key_Shared ordering is not supported (retainOrdering is)",
    "maxPendingAsyncRequests": "asynchronous functions are not supported",
    "showPreciseParallelism": "not used by the Python runtime",
    "downloaderImage": "instances download pyLocation themselves",
    "logTopicAgent": "logTopic is written by the instance itself",
    "vpa": "no VerticalPodAutoscaler is rendered",
    "batchSourceConfig": "not a function setting",
    "genericRuntime": "only the Python runtime exists",
}
INPUT_USED = frozenset({"topics", "topicPattern", "customSerdeSources", "customSchemaSources", "sourceSpecs",
                        "typeClassName"})
SOURCE_SPEC_USED = frozenset({"schemaType", "serdeClassName", "isRegexPattern"})
OUTPUT_USED = frozenset({"topic", "sinkSerdeClassName", "sinkSchemaType", "typeClassName"})
PULSAR_USED = frozenset({"pulsarConfig", "authSecret", "tlsSecret", "tlsConfig"})
PULSAR_REASON = "not a field this operator knows"
PULSAR_IGNORED = {"authConfig": "OAuth2 and generic authentication are not supported; give the "
                                "plugin and parameters in pulsar.authSecret"}
TLS_CONFIG_USED = frozenset({"enabled", "allowInsecure", "hostnameVerification", "certSecretName",
                             "certSecretKey"})
#: pod fields put on the instances' pods or their HPA.
POD_USED = frozenset({
    "labels", "annotations", "nodeSelector", "affinity", "tolerations", "securityContext",
    "terminationGracePeriodSeconds", "volumes", "imagePullSecrets", "initContainers", "sidecars",
    "serviceAccountName", "env", "topologySpreadConstraints", "liveness", "builtinAutoscaler",
    "autoScalingMetrics", "autoScalingBehavior",
})


@dataclasses.dataclass(frozen=True)
class IgnoredField:
    """A spec field that is accepted but has no effect, and why."""

    field: str
    reason: str

    def as_status(self) -> dict[str, str]:
        return {"field": self.field, "reason": self.reason}


def spec_of(body: dict[str, Any]) -> dict[str, Any]:
    spec = body.get("spec") or {}
    return spec if isinstance(spec, dict) else {}


def function_name(body: dict[str, Any]) -> str:
    return str(spec_of(body).get("name") or (body.get("metadata") or {}).get("name") or "")


def validate(body: dict[str, Any]) -> list[str]:
    spec = spec_of(body)
    problems = []
    if not spec.get("className"):
        problems.append("spec.className is required")
    inputs = spec.get("input") or {}
    if not inputs.get("topics") and not inputs.get("topicPattern"):
        problems.append("spec.input.topics or spec.input.topicPattern is required")
    if spec.get("python") is None:
        runtime = "java" if spec.get("java") else "golang" if spec.get("golang") else None
        problems.append(f"only Python functions are supported; spec.{runtime} was given" if runtime
                        else "spec.python is required (py, pyLocation, or {} for code installed in the image)")
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
    if not (spec.get("pulsar") or {}).get("pulsarConfig") and not (spec.get("clusterRef") or {}).get("name"):
        problems.append("spec.pulsar.pulsarConfig or spec.clusterRef.name is required (where instances find Pulsar)")
    location = str((spec.get("python") or {}).get("pyLocation") or "")
    if is_package_url(location) and not _PACKAGE_URL.match(location):
        problems.append(f"spec.python.pyLocation {location!r} is not a package URL "
                        "function://tenant/namespace/name[@version]")
    tls_config = (spec.get("pulsar") or {}).get("tlsConfig") or {}
    if tls_config.get("certSecretName") and not tls_config.get("certSecretKey"):
        problems.append("spec.pulsar.tlsConfig.certSecretKey is required with certSecretName "
                        "(the key of the CA certificate in that Secret)")
    return problems


def secret_env_name(name: str) -> str:
    return "PULSAR_SECRET_" + _ENV_NAME.sub("_", name).upper()


def downloadable(location: str | None) -> bool:
    """Whether the instance can fetch pyLocation: an http(s):// or file:// URL, or a package URL."""
    return bool(location) and (urllib.parse.urlsplit(str(location)).scheme in DOWNLOAD_SCHEMES
                               or is_package_url(str(location)))


def is_package_url(location: str | None) -> bool:
    """Whether pyLocation names a package of the brokers' packages management (function://...)."""
    return bool(location) and urllib.parse.urlsplit(str(location)).scheme == PACKAGE_SCHEME


def needs_web_service_url(body: dict[str, Any]) -> bool:
    """Whether the instances download their code from the brokers' packages API."""
    return is_package_url((spec_of(body).get("python") or {}).get("pyLocation"))


def function_config(body: dict[str, Any], broker_service_url: str | None,
                    web_service_url: str | None = None) -> dict[str, Any]:
    """The function.json document `pulsar function-instance` reads (None values left out).

    The instance count (replicas) is not in it: scaling must not change the
    config, whose digest rolls the pods. webServiceUrl, where a package URL
    is downloaded from, is only there for a function whose code is one.
    """
    spec = spec_of(body)
    inputs = spec.get("input") or {}
    output = spec.get("output") or {}
    python = spec.get("python") or {}
    config: dict[str, Any] = {
        "tenant": spec.get("tenant") or "public",
        "namespace": spec.get("namespace") or "default",
        "name": function_name(body),
        "className": spec.get("className"),
        "runtime": "PYTHON",
        "py": python.get("py"),
        "pyLocation": python.get("pyLocation") if downloadable(python.get("pyLocation")) else None,
        "inputs": list(inputs.get("topics") or []),
        "topicsPattern": inputs.get("topicPattern"),
        "customSerdeInputs": inputs.get("customSerdeSources") or None,
        "customSchemaInputs": inputs.get("customSchemaSources") or None,
        "inputSpecs": _input_specs(inputs.get("sourceSpecs") or {}) or None,
        "output": output.get("topic"),
        "outputSerdeClassName": output.get("sinkSerdeClassName"),
        "outputSchemaType": output.get("sinkSchemaType"),
        "inputTypeClassName": inputs.get("typeClassName"),
        "outputTypeClassName": output.get("typeClassName"),
        "logTopic": spec.get("logTopic"),
        "processingGuarantee": str(spec.get("processingGuarantee") or "atleast_once").upper(),
        "subscriptionName": spec.get("subscriptionName"),
        "subscriptionPosition": spec.get("subscriptionPosition"),
        "autoAck": bool(spec.get("autoAck", True)),
        "maxMessageRetries": spec.get("maxMessageRetry"),
        "deadLetterTopic": spec.get("deadLetterTopic"),
        "timeoutMs": spec.get("timeout"),
        "retainOrdering": bool(spec.get("retainOrdering", False)),
        "userConfig": spec.get("funcConfig") or {},
        "secretsMap": {name: secret_env_name(name) for name in sorted(spec.get("secretsMap") or {})},
        "brokerServiceUrl": broker_service_url,
        "webServiceUrl": web_service_url if needs_web_service_url(body) else None,
    }
    return {key: value for key, value in config.items() if value is not None}


def _input_specs(source_specs: dict[str, Any]) -> dict[str, Any]:
    return {topic: {key: value for key, value in (conf or {}).items() if key in SOURCE_SPEC_USED}
            for topic, conf in source_specs.items()}


def ignored_fields(body: dict[str, Any]) -> list[IgnoredField]:
    """Every field the spec sets that has no effect here, in a stable order."""
    spec = spec_of(body)
    found = [IgnoredField(f"spec.{key}", IGNORED.get(key, "not a field this operator knows"))
             for key in sorted(spec) if key not in USED]
    found += _unused("spec.input", spec.get("input"), INPUT_USED, {})
    for topic, conf in sorted(((spec.get("input") or {}).get("sourceSpecs") or {}).items()):
        found += _unused(f"spec.input.sourceSpecs.{topic}", conf, SOURCE_SPEC_USED, {},
                         "only schemaType, serdeClassName and isRegexPattern are used")
    found += _unused("spec.output", spec.get("output"), OUTPUT_USED, {},
                     "producer settings are the client's defaults")
    found += _unused("spec.pulsar", spec.get("pulsar"), PULSAR_USED, PULSAR_IGNORED, PULSAR_REASON)
    found += _unused("spec.pulsar.tlsConfig", (spec.get("pulsar") or {}).get("tlsConfig"),
                     TLS_CONFIG_USED, {})
    found += _unused("spec.pod", spec.get("pod"), POD_USED, {}, "not applied to instance pods")
    found += _autoscaler_entries(spec)
    location = (spec.get("python") or {}).get("pyLocation")
    if location and not downloadable(location):
        found.append(IgnoredField("spec.python.pyLocation", "not a URL the instance fetches (function://, "
                                  "http(s):// or file://); the code must be at spec.python.py in the image"))
    if spec.get("forwardSourceMessageProperty") is False:
        found.append(IgnoredField("spec.forwardSourceMessageProperty", "outputs always carry the input's properties"))
    if spec.get("cleanupSubscription"):
        found.append(IgnoredField("spec.cleanupSubscription", "the input subscription is kept after deletion"))
    return found


def _unused(path: str, section: Any, used: frozenset[str], reasons: dict[str, str],
            default: str = "not a field this operator knows") -> list[IgnoredField]:
    if not isinstance(section, dict):
        return []
    return [IgnoredField(f"{path}.{key}", reasons.get(key, default))
            for key in sorted(section) if key not in used and section[key] not in (None, "", {}, [])]


def _autoscaler_entries(spec: dict[str, Any]) -> list[IgnoredField]:
    entries = (spec.get("pod") or {}).get("builtinAutoscaler") or []
    return [IgnoredField(f"spec.pod.builtinAutoscaler[{i}]", "not AverageUtilization(CPU|Memory)Percent<N>")
            for i, entry in enumerate(entries) if not BUILTIN_AUTOSCALER.match(str(entry))]
