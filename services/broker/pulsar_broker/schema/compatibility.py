"""Whether a new schema may join a topic's schema history, per compatibility strategy.

Strategies are Apache's: BACKWARD (the new schema reads data written with the
old), FORWARD (the old reads data written with the new), FULL (both);
the *_TRANSITIVE variants check every earlier version since the last delete,
the others only the latest. ALWAYS_COMPATIBLE accepts anything,
ALWAYS_INCOMPATIBLE refuses any schema that is not already registered.

AVRO and JSON definitions are checked with the Avro resolution rules
(pulsar_broker.schema.avro); a change of type, or of the definition of any
other type, is incompatible (except under ALWAYS_COMPATIBLE).

Pure code: no I/O.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pulsar_broker.schema import avro, errors, records

STRATEGIES = ("ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
              "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE")
DEFAULT_STRATEGY = "FULL"


def resolve_strategy(namespace_value: str | None, broker_default: str) -> str:
    """The namespace's strategy, or the broker's when it has none (UNDEFINED)."""
    if namespace_value and namespace_value.upper() in STRATEGIES:
        return namespace_value.upper()
    return broker_default.upper() if broker_default.upper() in STRATEGIES else DEFAULT_STRATEGY


def is_transitive(strategy: str) -> bool:
    return strategy.endswith("_TRANSITIVE")


def same_schema(a: records.SchemaData, b: records.SchemaData) -> bool:
    """Equal type and definition (JSON definitions compared as JSON values)."""
    if a.type != b.type:
        return False
    if a.data == b.data:
        return True
    if a.type in records.TEXT_TYPES:
        try:
            return bool(json.loads(a.data) == json.loads(b.data))
        except ValueError:
            return False
    return False


def check(existing: Sequence[records.SchemaData], new: records.SchemaData, strategy: str) -> None:
    """Raise IncompatibleSchemaError when `new` may not follow `existing` (oldest first,
    only versions after the last delete) under `strategy`."""
    if not existing or strategy == "ALWAYS_COMPATIBLE":
        return
    if strategy == "ALWAYS_INCOMPATIBLE":
        raise errors.IncompatibleSchemaError(
            f"Incompatible schema: the compatibility strategy is ALWAYS_INCOMPATIBLE and the topic "
            f"already has a {existing[-1].type} schema")
    against = existing if is_transitive(strategy) else existing[-1:]
    for old in reversed(against):
        check_pair(old, new, strategy.removesuffix("_TRANSITIVE"))


def check_pair(old: records.SchemaData, new: records.SchemaData, direction: str) -> None:
    """One comparison: direction BACKWARD, FORWARD or FULL."""
    if same_schema(old, new):
        return
    if old.type != new.type:
        raise errors.IncompatibleSchemaError(
            f"Incompatible schema: existing schema type {old.type}, new schema type {new.type}")
    if new.type not in records.AVRO_BASED:
        raise errors.IncompatibleSchemaError(
            f"Incompatible schema: the {new.type} definition differs from the existing one")
    old_node, new_node = parse_definition(old), parse_definition(new)
    problems: list[str] = []
    if direction in ("BACKWARD", "FULL"):
        problems += [f"new schema cannot read old data: {p}"
                     for p in avro.read_problems(old_node, new_node)]
    if direction in ("FORWARD", "FULL"):
        problems += [f"old schema cannot read new data: {p}"
                     for p in avro.read_problems(new_node, old_node)]
    if problems:
        raise errors.IncompatibleSchemaError(
            f"Incompatible schema ({direction}): " + "; ".join(problems[:5]))


def parse_definition(schema: records.SchemaData) -> avro.Node:
    try:
        return avro.parse(schema.data)
    except avro.InvalidAvroSchemaError as exc:
        raise errors.InvalidSchemaDefinitionError(
            f"Invalid {schema.type} schema definition: {exc}") from exc


def validate(schema: records.SchemaData) -> None:
    """Refuse a definition that cannot be parsed (AVRO and JSON must be Avro records)."""
    if schema.type in records.AVRO_BASED:
        parse_definition(schema)
