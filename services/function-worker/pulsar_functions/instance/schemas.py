"""The Pulsar schema of a function's input or output, chosen as Apache's Python runtime does.

A schema type of AVRO or JSON with a type class (a `pulsar.schema.Record`
subclass in the function's code or installed modules: `inputTypeClassName`,
`outputTypeClassName`) makes the input's consumer or the output's producer
use the official client's `AvroSchema` / `JsonSchema` of that class: the
broker checks it against the topic's schema, the function gets Record
objects and returns them. A schema type that names a class (`module.Class`)
is a custom `pulsar.schema.Schema`, built from the type class when its
constructor takes one. Anything else (no schema type, STRING, BYTES, and
JSON without a type class) is None here: those stay serdes over the message
bytes (serde.py), as they were before schemas.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pulsar.schema

from pulsar_functions import errors

#: Schema types that are serdes over bytes (serde.SCHEMA_SERDES) unless a type class makes
#: JSON a schema.
SERDE_TYPES = ("STRING", "BYTES")

Load = Callable[[str], Any]


def resolve(schema_type: str | None, type_class_name: str | None, load: Load) -> Any | None:
    """The pulsar.schema.Schema to consume or produce with, or None for a serde.

    load(name) imports a class of the function's code. Raises InvalidFunctionConfigError for
    AVRO without a type class, FunctionCodeError for a class that cannot be used."""
    if not schema_type or schema_type.upper() in SERDE_TYPES:
        return None
    kind = schema_type.upper()
    if kind == "JSON" and not type_class_name:
        return None
    if kind in ("JSON", "AVRO"):
        if not type_class_name:
            raise errors.InvalidFunctionConfigError(
                "schema type AVRO needs a type class (inputTypeClassName / outputTypeClassName: "
                "a pulsar.schema.Record subclass)")
        record = _record_class(load, type_class_name)
        try:
            return (pulsar.schema.JsonSchema(record) if kind == "JSON"
                    else pulsar.schema.AvroSchema(record))
        except Exception as exc:
            raise errors.FunctionCodeError(
                f"cannot build the {kind} schema of {type_class_name}: {exc}") from exc
    return _custom(load, schema_type, type_class_name)


def _record_class(load: Load, name: str) -> Any:
    record = load(name)
    if not (isinstance(record, type) and issubclass(record, pulsar.schema.Record)):
        raise errors.FunctionCodeError(f"type class {name} is not a pulsar.schema.Record")
    return record


def _custom(load: Load, schema_class_name: str, type_class_name: str | None) -> Any:
    """A schema class of the user's: built with the record class when its constructor takes
    an argument, else without."""
    if "." not in schema_class_name:
        raise errors.InvalidFunctionConfigError(
            f"schema type {schema_class_name} is not supported (use STRING, BYTES, JSON, AVRO "
            "or a module.Class of pulsar.schema.Schema)")
    schema_class = load(schema_class_name)
    try:
        takes = len(inspect.signature(schema_class).parameters)
        if takes == 0:
            return schema_class()
        record = _record_class(load, type_class_name) if type_class_name else None
        return schema_class(record)
    except (TypeError, ValueError) as exc:
        raise errors.FunctionCodeError(f"cannot build schema {schema_class_name}: {exc}") from exc
