"""The topic's schema from the broker's schema registry, used when no `schema` option is given.

The admin API's `GET /admin/v2/schemas/<tenant>/<ns>/<topic>/schemas` lists a
topic's live versions. The latest decides the columns: AVRO and JSON records
become columns, STRING and the fixed-width primitives (INT8..INT64, FLOAT,
DOUBLE, BOOLEAN) the typed column `value`; no schema, BYTES and every other
type (PROTOBUF, KEY_VALUE, ...) the binary column `value`.

Messages carry the version they were written with. Avro binary data can only
be read with the schema that wrote it, so every live AVRO version is kept
and each message is decoded with its own version's schema and resolved to
the latest (the registry only admitted versions the strategy accepted).
JSON is self-describing: every message is read by field name with the latest
definition (fields a message lacks are null).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from pulsar_spark import admin, errors

#: Pulsar schema types -> the data source's schema.type.
PRIMITIVE_KINDS = {"INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64",
                   "FLOAT": "float", "DOUBLE": "double", "BOOLEAN": "boolean"}


@dataclasses.dataclass(frozen=True)
class TopicSchema:
    kind: str
    definition: dict[str, Any] | None = None
    #: AVRO only: the definition of every live version (messages are decoded with theirs).
    writer_definitions: dict[int, dict[str, Any]] = dataclasses.field(default_factory=dict)


BYTES = TopicSchema("bytes")


def schemas_path(topic: str) -> str:
    tenant_namespace_topic = admin.topic_path(topic).split("/", 1)[1]  # no domain here
    return f"/admin/v2/schemas/{tenant_namespace_topic}/schemas"


def of_topic(client: admin.AdminClient, topic: str) -> TopicSchema:
    """The schema a reader of `topic` uses by default."""
    body = client.get_json(schemas_path(topic), not_found=f"namespace of {topic} not found")
    versions = body.get("getSchemaResponses", []) if isinstance(body, dict) else []
    if not versions:
        return BYTES
    return from_versions(topic, versions)


def from_versions(topic: str, versions: Sequence[dict[str, Any]]) -> TopicSchema:
    """From GetSchemaResponse objects, oldest first."""
    latest = versions[-1]
    kind = str(latest.get("type", "")).upper()
    if kind == "STRING":
        return TopicSchema("string")
    if kind in PRIMITIVE_KINDS:
        return TopicSchema(PRIMITIVE_KINDS[kind])
    if kind not in ("AVRO", "JSON"):
        return BYTES
    definition = _record(topic, latest)
    writers = {int(v["version"]): _record(topic, v) for v in versions
               if str(v.get("type", "")).upper() == "AVRO"} if kind == "AVRO" else {}
    return TopicSchema(kind.lower(), definition, writers)


def _record(topic: str, response: dict[str, Any]) -> dict[str, Any]:
    try:
        definition = json.loads(response.get("data") or "")
    except ValueError as exc:
        raise errors.SchemaError(
            f"{topic}: schema version {response.get('version')} is not a JSON definition") from exc
    if not isinstance(definition, dict) or definition.get("type") != "record":
        raise errors.SchemaError(
            f"{topic}: schema version {response.get('version')} is not an Avro record "
            "definition; give the option schema")
    return definition


def common(topics: Sequence[str], found: Sequence[TopicSchema]) -> TopicSchema:
    """One schema for a read over several topics: their latest schemas must agree."""
    if not found:
        return BYTES
    first = found[0]
    for topic, other in zip(topics[1:], found[1:], strict=True):
        if (other.kind, other.definition) != (first.kind, first.definition):
            raise errors.SchemaError(
                f"topics {topics[0]} and {topic} have different schemas ({first.kind} and "
                f"{other.kind}); read them apart or give the options schema/schema.type")
    return first


def writers_by_topic(topics: Sequence[str], found: Sequence[TopicSchema]
                     ) -> dict[str, dict[int, dict[str, Any]]]:
    """Each topic's AVRO versions (version numbers are per topic)."""
    return {t: s.writer_definitions for t, s in zip(topics, found, strict=True)
            if s.writer_definitions}
