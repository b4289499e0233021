"""One function's configuration, read from function.json or a worker's `functionConfig`.

Two spellings reach us: the keys the operator renders into a pod's
function.json (`processingGuarantee`, `subscriptionName`, `secretsMap`) and
Apache's FunctionConfig JSON that `pulsar-admin functions create` posts
(`processingGuarantees`, `subName`, `secrets`, `customSerdeInputs`,
`inputSpecs`). Both parse into one frozen FunctionConfig; `to_json` writes
Apache's spelling back, which is what the worker stores and serves.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Mapping
from typing import Any

from pulsar_common import naming

from pulsar_functions import errors


class ProcessingGuarantee(enum.Enum):
    ATMOST_ONCE = "ATMOST_ONCE"
    ATLEAST_ONCE = "ATLEAST_ONCE"
    EFFECTIVELY_ONCE = "EFFECTIVELY_ONCE"
    #: The function acknowledges itself (context.ack); nothing is acked for it.
    MANUAL = "MANUAL"


class SubscriptionPosition(enum.Enum):
    LATEST = "Latest"
    EARLIEST = "Earliest"


@dataclasses.dataclass(frozen=True)
class InputSpec:
    """How one input topic (or pattern) is consumed."""

    topic: str
    is_pattern: bool = False
    serde_class_name: str | None = None
    schema_type: str | None = None


@dataclasses.dataclass(frozen=True)
class FunctionConfig:
    tenant: str
    namespace: str
    name: str
    class_name: str
    inputs: tuple[InputSpec, ...]
    runtime: str = "PYTHON"
    py: str | None = None
    py_location: str | None = None
    output: str | None = None
    output_serde_class_name: str | None = None
    output_schema_type: str | None = None
    #: pulsar.schema.Record classes of the inputs and output with an AVRO or JSON schema type.
    input_type_class_name: str | None = None
    output_type_class_name: str | None = None
    log_topic: str | None = None
    processing_guarantee: ProcessingGuarantee = ProcessingGuarantee.ATLEAST_ONCE
    subscription_name: str | None = None
    subscription_position: SubscriptionPosition = SubscriptionPosition.LATEST
    auto_ack: bool = True
    max_message_retries: int | None = None
    dead_letter_topic: str | None = None
    timeout_ms: int | None = None
    retain_ordering: bool = False
    cleanup_subscription: bool = True
    user_config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: secret name -> where the secrets provider finds it (an environment variable name by default).
    secrets: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    parallelism: int = 1
    broker_service_url: str | None = None
    web_service_url: str | None = None

    @property
    def fqfn(self) -> str:
        """The fully qualified function name, tenant/namespace/name."""
        return f"{self.tenant}/{self.namespace}/{self.name}"

    @property
    def effective_subscription_name(self) -> str:
        """Apache's default subscription is named after the function."""
        return self.subscription_name or self.fqfn

    @property
    def state_topic(self) -> str:
        """The topic holding the function's state updates (see instance/state.py)."""
        return f"persistent://{self.tenant}/{self.namespace}/__function-state-{self.name}"

    @property
    def acks_automatically(self) -> bool:
        return self.auto_ack and self.processing_guarantee is not ProcessingGuarantee.MANUAL

    def to_json(self) -> dict[str, Any]:
        """Apache's FunctionConfig JSON spelling (None values left out)."""
        specs = {spec.topic: _spec_json(spec) for spec in self.inputs}
        document: dict[str, Any] = {
            "tenant": self.tenant, "namespace": self.namespace, "name": self.name,
            "className": self.class_name, "runtime": self.runtime, "py": self.py,
            "pyLocation": self.py_location,
            "inputs": [s.topic for s in self.inputs if not s.is_pattern],
            "topicsPattern": next((s.topic for s in self.inputs if s.is_pattern), None),
            "inputSpecs": specs, "output": self.output,
            "outputSerdeClassName": self.output_serde_class_name,
            "outputSchemaType": self.output_schema_type, "logTopic": self.log_topic,
            "inputTypeClassName": self.input_type_class_name,
            "outputTypeClassName": self.output_type_class_name,
            "processingGuarantees": self.processing_guarantee.value,
            "subName": self.subscription_name,
            "subscriptionPosition": self.subscription_position.value,
            "autoAck": self.auto_ack, "maxMessageRetries": self.max_message_retries,
            "deadLetterTopic": self.dead_letter_topic, "timeoutMs": self.timeout_ms,
            "retainOrdering": self.retain_ordering,
            "cleanupSubscription": self.cleanup_subscription,
            "userConfig": dict(self.user_config), "secrets": dict(self.secrets),
            "parallelism": self.parallelism,
        }
        return {key: value for key, value in document.items() if value is not None}


def _spec_json(spec: InputSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"isRegexPattern": spec.is_pattern}
    if spec.serde_class_name:
        out["serdeClassName"] = spec.serde_class_name
    if spec.schema_type:
        out["schemaType"] = spec.schema_type
    return out


def parse(document: Mapping[str, Any]) -> FunctionConfig:
    """A FunctionConfig from either spelling; InvalidFunctionConfigError names what is wrong."""
    if not isinstance(document, Mapping):
        raise errors.InvalidFunctionConfigError("a function config is a JSON object")
    name = _text(document, "name")
    if not name:
        raise errors.InvalidFunctionConfigError("name is required")
    class_name = _text(document, "className")
    if not class_name:
        raise errors.InvalidFunctionConfigError("className is required")
    runtime = (_text(document, "runtime") or "PYTHON").upper()
    if runtime != "PYTHON":
        raise errors.InvalidFunctionConfigError(f"runtime {runtime} is not supported: only PYTHON")
    tenant = _text(document, "tenant") or "public"
    namespace = _text(document, "namespace") or "default"
    return FunctionConfig(
        tenant=tenant, namespace=namespace, name=name, class_name=class_name,
        inputs=_inputs(document, tenant, namespace), runtime=runtime,
        py=_text(document, "py"), py_location=_text(document, "pyLocation"),
        output=_topic(_text(document, "output"), tenant, namespace),
        output_serde_class_name=_text(document, "outputSerdeClassName"),
        output_schema_type=_text(document, "outputSchemaType"),
        input_type_class_name=_text(document, "inputTypeClassName"),
        output_type_class_name=_text(document, "outputTypeClassName"),
        log_topic=_topic(_text(document, "logTopic"), tenant, namespace),
        processing_guarantee=_guarantee(document),
        subscription_name=_text(document, "subscriptionName") or _text(document, "subName"),
        subscription_position=_position(document),
        auto_ack=_flag(document, "autoAck", True),
        max_message_retries=_count(document, "maxMessageRetries"),
        dead_letter_topic=_topic(_text(document, "deadLetterTopic"), tenant, namespace),
        timeout_ms=_count(document, "timeoutMs"),
        retain_ordering=_flag(document, "retainOrdering", False),
        cleanup_subscription=_flag(document, "cleanupSubscription", True),
        user_config=_object(document, "userConfig"),
        secrets=_object(document, "secretsMap") or _object(document, "secrets"),
        parallelism=_count(document, "parallelism") or 1,
        broker_service_url=_text(document, "brokerServiceUrl"),
        web_service_url=_text(document, "webServiceUrl"),
    )


def loads(text: str | bytes) -> FunctionConfig:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise errors.InvalidFunctionConfigError(f"function config is not JSON: {exc}") from exc
    return parse(document)


def merge(current: FunctionConfig, update: Mapping[str, Any]) -> FunctionConfig:
    """current with the keys update sets replaced (an update posts only what changes)."""
    merged = {**current.to_json(), **{k: v for k, v in update.items() if v is not None}}
    if "processingGuarantee" in update:
        merged.pop("processingGuarantees", None)
    if "subscriptionName" in update:
        merged.pop("subName", None)
    return parse(merged)


def _inputs(document: Mapping[str, Any], tenant: str, namespace: str) -> tuple[InputSpec, ...]:
    specs: dict[str, InputSpec] = {}
    raw_inputs = document.get("inputs") or []
    if isinstance(raw_inputs, str):
        raw_inputs = [t for t in raw_inputs.split(",") if t.strip()]
    for topic in raw_inputs:
        full = _topic(str(topic).strip(), tenant, namespace)
        assert full is not None
        specs[full] = InputSpec(full)
    for topic, serde in (_object(document, "customSerdeInputs")).items():
        full = _topic(topic, tenant, namespace) or topic
        specs[full] = InputSpec(full, serde_class_name=str(serde))
    for topic, schema in (_object(document, "customSchemaInputs")).items():
        full = _topic(topic, tenant, namespace) or topic
        specs[full] = InputSpec(full, schema_type=str(schema))
    for topic, raw in (_object(document, "inputSpecs")).items():
        spec = raw if isinstance(raw, Mapping) else {}
        pattern = bool(spec.get("isRegexPattern"))
        full = topic if pattern else (_topic(topic, tenant, namespace) or topic)
        specs[full] = InputSpec(full, pattern, spec.get("serdeClassName") or None,
                                spec.get("schemaType") or None)
    pattern_text = _text(document, "topicsPattern")
    if pattern_text:
        full = pattern_text if "://" in pattern_text else (
            f"persistent://{tenant}/{namespace}/{pattern_text}")
        specs[full] = InputSpec(full, is_pattern=True)
    if not specs:
        raise errors.InvalidFunctionConfigError("no input topics: set inputs or topicsPattern")
    return tuple(specs.values())


def _topic(text: str | None, tenant: str, namespace: str) -> str | None:
    if not text:
        return None
    if "/" not in text:
        text = f"{tenant}/{namespace}/{text}"
    try:
        return str(naming.TopicName.parse(text))
    except naming.InvalidTopicNameError as exc:
        raise errors.InvalidFunctionConfigError(str(exc)) from exc


def _guarantee(document: Mapping[str, Any]) -> ProcessingGuarantee:
    raw = _text(document, "processingGuarantee") or _text(document, "processingGuarantees")
    try:
        return ProcessingGuarantee((raw or "ATLEAST_ONCE").upper())
    except ValueError as exc:
        choices = ", ".join(g.value for g in ProcessingGuarantee)
        raise errors.InvalidFunctionConfigError(
            f"processingGuarantee {raw!r} is not one of {choices}") from exc


def _position(document: Mapping[str, Any]) -> SubscriptionPosition:
    raw = (_text(document, "subscriptionPosition") or "latest").lower()
    for position in SubscriptionPosition:
        if position.value.lower() == raw:
            return position
    raise errors.InvalidFunctionConfigError(
        f"subscriptionPosition {raw!r} is not Latest or Earliest")


def _text(document: Mapping[str, Any], key: str) -> str | None:
    value = document.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise errors.InvalidFunctionConfigError(f"{key} must be a string")
    return value


def _flag(document: Mapping[str, Any], key: str, default: bool) -> bool:
    value = document.get(key)
    if value is None:
        return default
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _count(document: Mapping[str, Any], key: str) -> int | None:
    value = document.get(key)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError) as exc:
        raise errors.InvalidFunctionConfigError(f"{key} must be an integer") from exc
    if number < 0:
        raise errors.InvalidFunctionConfigError(f"{key} must not be negative")
    return number


def _object(document: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = document.get(key)
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise errors.InvalidFunctionConfigError(f"{key} is not a JSON object") from exc
    if not isinstance(value, Mapping):
        raise errors.InvalidFunctionConfigError(f"{key} must be an object")
    return dict(value)
