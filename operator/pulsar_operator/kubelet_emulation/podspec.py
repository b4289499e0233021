"""What a container's process gets from its pod spec: environment, argv, ports (pure).

These follow the kubelet: `envFrom` first, then `env` in order, each value
expanded with `$(VAR)` against the variables defined before it; `valueFrom`
reads the downward API (fieldRef), ConfigMaps and Secrets. The command and
args are expanded against the final environment. `$$` escapes a `$`, and a
reference to an undefined variable stays as written, as in Kubernetes.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from typing import Any

#: (kind, namespace, name) -> the ConfigMap or Secret, or None when missing.
Lookup = Callable[[str, str, str], dict[str, Any] | None]
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


class ConfigError(Exception):
    """The container cannot start yet (the kubelet's CreateContainerConfigError)."""


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion."""
    out: list[str] = []
    i = 0
    while i < len(text):
        if text[i] == "$" and i + 1 < len(text):
            if text[i + 1] == "$":
                out.append("$")
                i += 2
                continue
            if text[i + 1] == "(":
                end = text.find(")", i + 2)
                if end != -1:
                    name = text[i + 2:end]
                    out.append(env[name] if name in env else text[i:end + 1])
                    i = end + 1
                    continue
        out.append(text[i])
        i += 1
    return "".join(out)


def config_bytes(kind: str, obj: dict[str, Any]) -> dict[str, bytes]:
    """A ConfigMap's or Secret's keys as the bytes of their volume files: Secret data and
    ConfigMap binaryData are base64 of any bytes (a raw HMAC key is not UTF-8); stringData
    and ConfigMap data are text."""
    text, binary = ("stringData", "data") if kind == "Secret" else ("data", "binaryData")
    result = {k: base64.b64decode(v) for k, v in (obj.get(binary) or {}).items()}
    result.update({k: str(v).encode() for k, v in (obj.get(text) or {}).items()})
    return result


def config_data(kind: str, obj: dict[str, Any]) -> dict[str, str]:
    """A ConfigMap's or Secret's keys as environment values. As the kubelet, env reads a
    ConfigMap's data only, not its binaryData; Secret bytes that are not UTF-8 stay surrogate
    escapes, which the child's environment turns back into the same bytes."""
    if kind == "Secret":
        return {k: v.decode("utf-8", "surrogateescape") for k, v in config_bytes(kind, obj).items()}
    return {k: str(v) for k, v in (obj.get("data") or {}).items()}


def field_value(pod: dict[str, Any], path: str, pod_ip: str) -> str:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    simple = {
        "metadata.name": meta.get("name"), "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"), "spec.nodeName": spec.get("nodeName") or "harness",
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": pod_ip, "status.podIPs": pod_ip, "status.hostIP": "127.0.0.1",
    }
    if path in simple:
        return str(simple[path] or "")
    if match := _SUBSCRIPT.match(path):
        return str((meta.get(match.group(1)) or {}).get(match.group(2), ""))
    raise ConfigError(f"unsupported fieldRef {path}")


def _ref_value(kind: str, ref: dict[str, Any], namespace: str, lookup: Lookup) -> str | None:
    obj = lookup(kind, namespace, str(ref.get("name") or ""))
    data = config_data(kind, obj) if obj is not None else None
    if data is None or ref.get("key") not in data:
        if ref.get("optional"):
            return None
        raise ConfigError(f"{kind} {ref.get('name')} key {ref.get('key')} not found")
    return data[str(ref["key"])]


def _value_from(source: dict[str, Any], pod: dict[str, Any], pod_ip: str, lookup: Lookup) -> str | None:
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    if "fieldRef" in source:
        return field_value(pod, str(source["fieldRef"].get("fieldPath")), pod_ip)
    if "configMapKeyRef" in source:
        return _ref_value("ConfigMap", source["configMapKeyRef"], namespace, lookup)
    if "secretKeyRef" in source:
        return _ref_value("Secret", source["secretKeyRef"], namespace, lookup)
    raise ConfigError(f"unsupported valueFrom {sorted(source)}")


def _env_from(container: dict[str, Any], namespace: str, lookup: Lookup) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        kind, ref = ("ConfigMap", source["configMapRef"]) if "configMapRef" in source else ("Secret", source.get("secretRef"))
        ref = ref or {}
        obj = lookup(kind, namespace, str(ref.get("name") or ""))
        if obj is None:
            if ref.get("optional"):
                continue
            raise ConfigError(f"{kind} {ref.get('name')} not found")
        prefix = str(source.get("prefix") or "")
        env.update({prefix + k: v for k, v in config_data(kind, obj).items() if _ENV_NAME.match(prefix + k)})
    return env


def environment(container: dict[str, Any], pod: dict[str, Any], pod_ip: str, lookup: Lookup) -> dict[str, str]:
    """The container's own variables, in the kubelet's order; raises ConfigError on a missing reference."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    env = _env_from(container, namespace, lookup)
    for var in container.get("env") or []:
        name = str(var["name"])
        if "valueFrom" in var:
            value = _value_from(var["valueFrom"], pod, pod_ip, lookup)
            if value is not None:
                env[name] = value
        else:
            env[name] = expand(str(var.get("value") or ""), env)
    return env


def argv(container: dict[str, Any], env: dict[str, str]) -> list[str]:
    """command + args, expanded; there are no images here, so a command is required."""
    command = [expand(str(part), env) for part in container.get("command") or []]
    if not command:
        raise ConfigError(f"container {container.get('name')} has no command (the harness runs no image entrypoints)")
    return command + [expand(str(part), env) for part in container.get("args") or []]


def port_number(pod: dict[str, Any], port: Any) -> int:
    """A probe's or Service's port: a number, or the name of a container port."""
    if isinstance(port, int) or (isinstance(port, str) and port.isdigit()):
        return int(port)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for declared in container.get("ports") or []:
            if declared.get("name") == port:
                return int(declared["containerPort"])
    raise ConfigError(f"no container port named {port!r}")
