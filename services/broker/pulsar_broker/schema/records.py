"""What a schema version is: its type, definition bytes, properties, time and deleted mark.

The same schema reaches the broker three ways (a producer's or consumer's
protocol `Schema`, the admin REST `PostSchemaPayload`, and the store's JSON
record); this module converts between them. Type names are Apache's
SchemaType names (`AVRO`, `JSON`, `STRING`, ...); the protocol carries the
same numbers except for BYTES, which the clients never send (a BYTES producer
announces no schema at all).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
from typing import Any

from pulsar_common.wire import pulsar_api_pb2 as pb

#: Apache's SchemaType names by protocol Schema.Type number.
TYPE_NAMES: dict[int, str] = {
    0: "NONE", 1: "STRING", 2: "JSON", 3: "PROTOBUF", 4: "AVRO", 5: "BOOLEAN", 6: "INT8",
    7: "INT16", 8: "INT32", 9: "INT64", 10: "FLOAT", 11: "DOUBLE", 12: "DATE", 13: "TIME",
    14: "TIMESTAMP", 15: "KEY_VALUE", 16: "INSTANT", 17: "LOCAL_DATE", 18: "LOCAL_TIME",
    19: "LOCAL_DATE_TIME", 20: "PROTOBUF_NATIVE",
}
TYPE_NUMBERS: dict[str, int] = {name: number for number, name in TYPE_NAMES.items()}
#: Types whose definition is text (shown as such by the admin API).
TEXT_TYPES = frozenset({"AVRO", "JSON", "PROTOBUF", "PROTOBUF_NATIVE"})
#: Types whose definition is an Avro record (checked with the Avro resolution rules).
AVRO_BASED = frozenset({"AVRO", "JSON"})
#: Accepted by the admin API besides the protocol types.
REST_ONLY_TYPES = frozenset({"BYTES"})

#: Schema versions are 8-byte big-endian numbers on the wire (Apache's LongSchemaVersion).
_VERSION = struct.Struct(">q")


class InvalidSchemaError(ValueError):
    """A schema payload that cannot be understood."""


@dataclasses.dataclass(frozen=True)
class SchemaData:
    """A schema as submitted (no version yet)."""

    type: str
    data: bytes
    properties: tuple[tuple[str, str], ...] = ()

    @property
    def properties_dict(self) -> dict[str, str]:
        return dict(self.properties)


@dataclasses.dataclass(frozen=True)
class StoredSchema:
    """One version of a topic's schema; a deleted mark carries no definition."""

    version: int
    schema: SchemaData
    timestamp_ms: int
    deleted: bool = False


def encode_version(version: int) -> bytes:
    return _VERSION.pack(version)


def decode_version(raw: bytes) -> int | None:
    """The version a client names; None when it names none (empty or malformed)."""
    if len(raw) != _VERSION.size:
        return None
    value: int = _VERSION.unpack(raw)[0]
    return value


def from_protocol(schema: pb.Schema) -> SchemaData:
    name = TYPE_NAMES.get(schema.type)
    if name is None:
        raise InvalidSchemaError(f"Unknown schema type {schema.type}")
    properties = tuple(sorted((p.key, p.value) for p in schema.properties))
    return SchemaData(name, bytes(schema.schema_data), properties)


def to_protocol(schema: SchemaData, topic: str) -> pb.Schema:
    record = pb.Schema(name=topic, schema_data=schema.data,
                       type=TYPE_NUMBERS.get(schema.type, 0))  # type: ignore[arg-type]
    for key, value in schema.properties:
        record.properties.add(key=key, value=value)
    return record


def from_payload(payload: Any) -> SchemaData:
    """Apache's PostSchemaPayload: {"type": "AVRO", "schema": "<definition>", "properties": {}}."""
    if not isinstance(payload, dict):
        raise InvalidSchemaError("Schema payload must be a JSON object")
    kind = str(payload.get("type") or "NONE").upper()
    if kind not in TYPE_NUMBERS and kind not in REST_ONLY_TYPES:
        raise InvalidSchemaError(f"Invalid schema type {kind}")
    definition = payload.get("schema") or ""
    if not isinstance(definition, str):
        raise InvalidSchemaError("schema must be a string")
    properties = payload.get("properties") or {}
    if not isinstance(properties, dict):
        raise InvalidSchemaError("properties must be an object")
    data = definition.encode()
    if kind == "KEY_VALUE" and definition:
        data = _key_value_from_json(definition)
    return SchemaData(kind, data, tuple(sorted((str(k), str(v)) for k, v in properties.items())))


def response(stored: StoredSchema) -> dict[str, Any]:
    """Apache's GetSchemaResponse."""
    return {
        "version": stored.version,
        "type": stored.schema.type,
        "timestamp": stored.timestamp_ms,
        "data": display_data(stored.schema),
        "properties": stored.schema.properties_dict,
    }


def display_data(schema: SchemaData) -> str:
    """The definition as the admin API shows it: text, KEY_VALUE as {"key", "value"}."""
    if schema.type == "KEY_VALUE" and len(schema.data) >= 8:
        key, value = split_key_value(schema.data)
        return json.dumps({"key": _json_or_text(key), "value": _json_or_text(value)})
    return schema.data.decode("utf-8", errors="replace")


def split_key_value(data: bytes) -> tuple[bytes, bytes]:
    """KEY_VALUE definitions are `len(4) key-definition len(4) value-definition`."""
    key_size = struct.unpack_from(">i", data, 0)[0]
    key = data[4:4 + max(key_size, 0)]
    rest = 4 + max(key_size, 0)
    value_size = struct.unpack_from(">i", data, rest)[0] if len(data) >= rest + 4 else 0
    return key, data[rest + 4:rest + 4 + max(value_size, 0)]


def _key_value_from_json(definition: str) -> bytes:
    try:
        parts = json.loads(definition)
        key, value = (json.dumps(parts[k]).encode() if not isinstance(parts[k], str)
                      else parts[k].encode() for k in ("key", "value"))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidSchemaError("KEY_VALUE schema must be {\"key\": ..., \"value\": ...}") from exc
    return struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value


def _json_or_text(data: bytes) -> Any:
    try:
        return json.loads(data) if data else ""
    except ValueError:
        return data.decode("utf-8", errors="replace")


def to_json(stored: StoredSchema) -> dict[str, Any]:
    """The store's record of one version."""
    return {
        "version": stored.version,
        "type": stored.schema.type,
        "data": base64.b64encode(stored.schema.data).decode(),
        "properties": stored.schema.properties_dict,
        "timestamp": stored.timestamp_ms,
        "deleted": stored.deleted,
    }


def from_json(value: dict[str, Any]) -> StoredSchema:
    schema = SchemaData(str(value["type"]), base64.b64decode(value["data"]),
                        tuple(sorted(value.get("properties", {}).items())))
    return StoredSchema(int(value["version"]), schema, int(value["timestamp"]),
                        bool(value.get("deleted", False)))
