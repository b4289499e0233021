"""Turns message bytes into the function's input and its return value back into bytes.

A serde is named by class (`serde.IdentitySerDe`, `pulsar.functions.serde.PickleSerDe`,
or a class of the user's code); a schema type (STRING, BYTES, JSON) names a
built-in one. Apache's Python default, IdentitySerDe, is ours too: it hands
the function an int, float or str when the bytes read as one.
"""

from __future__ import annotations

import importlib
import json
from typing import Any, Protocol

from pulsar_functions import errors


class SerDe(Protocol):
    def serialize(self, input: Any) -> bytes: ...

    def deserialize(self, input_bytes: bytes) -> Any: ...


class StringSerDe:
    def serialize(self, input: Any) -> bytes:
        return input if isinstance(input, bytes) else str(input).encode()

    def deserialize(self, input_bytes: bytes) -> Any:
        return input_bytes.decode("utf-8", errors="replace")


class BytesSerDe:
    def serialize(self, input: Any) -> bytes:
        return input if isinstance(input, bytes) else str(input).encode()

    def deserialize(self, input_bytes: bytes) -> Any:
        return input_bytes


class JsonSerDe:
    def serialize(self, input: Any) -> bytes:
        return json.dumps(input).encode()

    def deserialize(self, input_bytes: bytes) -> Any:
        return json.loads(input_bytes)


SCHEMA_SERDES: dict[str, type[Any]] = {
    "STRING": StringSerDe, "BYTES": BytesSerDe, "JSON": JsonSerDe,
}
DEFAULT = "serde.IdentitySerDe"


def resolve(class_name: str | None, schema_type: str | None = None) -> SerDe:
    if schema_type:
        kind = SCHEMA_SERDES.get(schema_type.upper())
        if kind is None:
            raise errors.InvalidFunctionConfigError(
                f"schema type {schema_type} is not supported (use {', '.join(SCHEMA_SERDES)})")
        return kind()  # type: ignore[no-any-return]
    name = class_name or DEFAULT
    if name.startswith("serde."):
        name = "pulsar.functions." + name
    module_name, _, attribute = name.rpartition(".")
    try:
        kind = getattr(importlib.import_module(module_name or "pulsar.functions.serde"), attribute)
        return kind()  # type: ignore[no-any-return]
    except (ImportError, AttributeError, TypeError) as exc:
        raise errors.FunctionCodeError(f"cannot load serde {class_name}: {exc}") from exc
