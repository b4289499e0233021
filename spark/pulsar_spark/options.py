"""The data source's options, parsed and checked once, before anything is read.

Spark hands options over as a case-insensitive string map. Everything is
validated here so a typo fails the query at once with the option's name,
instead of surfacing later as an empty result or an executor stack trace.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from pulsar_spark import errors

#: Entries one input partition reads at most; longer ledgers are split (readEntriesPerPartition).
ENTRIES_PER_PARTITION_DEFAULT = 50_000
#: Messages per Arrow record batch yielded by a reader.
ARROW_BATCH_ROWS_DEFAULT = 8192
#: Publish time is set by the producer's clock: pruning pads bounds by this much.
PUBLISH_TIME_TOLERANCE_MS_DEFAULT = 60_000

#: "auto" (the default): the topic's schema from the broker's registry (see topic_schema).
AUTO = "auto"
#: Fixed-width primitives, encoded big-endian as Pulsar's INT8..INT64, FLOAT, DOUBLE, BOOLEAN.
PRIMITIVE_TYPES = ("int8", "int16", "int32", "int64", "float", "double", "boolean")
SCHEMA_TYPES = ("bytes", "string", "json", "avro", *PRIMITIVE_TYPES, AUTO)

KNOWN_OPTIONS = frozenset({
    "service.url", "admin.url", "metadata.url", "standalone.bookie", "topic", "topics", "topicspattern",
    "startingoffsets", "endingoffsets", "startingtime", "endingtime", "schema", "schema.type",
    "failondataloss", "entriesperpartition", "minpartitions", "arrowbatchrows", "publishtime.tolerancems",
    "metrics.dir", "path", "subscription",
    # write side
    "producer.name", "batching", "sendtimeoutms",
})


@dataclasses.dataclass(frozen=True)
class Position:
    """(ledger, entry) of a topic partition's managed ledger."""

    ledger_id: int
    entry_id: int


#: Offsets are "earliest", "latest" or a position per topic partition.
Offsets = str | dict[str, Position]


@dataclasses.dataclass(frozen=True)
class ReadOptions:
    admin_url: str
    service_url: str | None
    metadata_url: str | None
    standalone_bookie: str | None
    topics: tuple[str, ...]
    topics_pattern: str | None
    starting: Offsets
    ending: Offsets
    starting_time_ms: int | None
    ending_time_ms: int | None
    schema_type: str
    schema_definition: dict[str, Any] | None
    fail_on_data_loss: bool
    entries_per_partition: int
    #: Input partitions wanted at least (Kafka source's minPartitions): segments are cut
    #: further when they hold enough entries. 1: one per ledger segment.
    min_partitions: int
    arrow_batch_rows: int
    publish_time_tolerance_ms: int
    metrics_dir: str | None
    #: Streaming only: durable subscription moved to each committed offset (pins retention).
    subscription: str | None = None
    #: AVRO topics read with their registry schema: topic -> version -> writer definition.
    writer_definitions: dict[str, dict[int, dict[str, Any]]] = dataclasses.field(
        default_factory=dict)


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


def _positive_int(opts: dict[str, str], key: str, default: int) -> int:
    raw = opts.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise errors.OptionError(f"option {key}={raw!r} must be an integer") from None
    if value <= 0:
        raise errors.OptionError(f"option {key}={raw!r} must be positive")
    return value


def _bool(opts: dict[str, str], key: str, default: bool) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise errors.OptionError(f"option {key}={raw!r} must be true or false")


def full_topic_name(name: str) -> str:
    """persistent://tenant/ns/topic for a short (`topic`, `ns/topic`) or full name."""
    name = name.strip()
    if not name:
        raise errors.OptionError("an empty topic name was given")
    if "://" in name:
        domain, _, rest = name.partition("://")
        if domain != "persistent":
            raise errors.OptionError(
                f"topic {name!r}: only persistent topics are stored in ledgers and can be read")
        if rest.count("/") != 2:
            raise errors.OptionError(f"topic {name!r} is not persistent://tenant/namespace/topic")
        return name
    parts = name.split("/")
    if len(parts) == 1:
        return f"persistent://public/default/{name}"
    if len(parts) == 3:
        return f"persistent://{name}"
    raise errors.OptionError(f"topic {name!r} is neither `topic`, `tenant/ns/topic` nor a full name")


def parse_offsets(raw: str | None, key: str, default: str) -> Offsets:
    """earliest | latest | {"persistent://t/ns/topic-partition-0": "ledger:entry", ...}."""
    if raw is None:
        return default
    text = raw.strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise errors.OptionError(
            f"option {key}={raw!r} must be earliest, latest or a JSON object of "
            f'{{"<topic partition>": "<ledgerId>:<entryId>"}}') from None
    if not isinstance(value, dict):
        raise errors.OptionError(f"option {key} must be a JSON object, not {type(value).__name__}")
    result: dict[str, Position] = {}
    for topic, position in value.items():
        result[full_topic_name(topic)] = _position(position, key, topic)
    return result


def _position(raw: Any, key: str, topic: str) -> Position:
    if isinstance(raw, str) and re.fullmatch(r"-?\d+:-?\d+", raw.strip()):
        ledger, entry = raw.strip().split(":")
        return Position(int(ledger), int(entry))
    if isinstance(raw, list) and len(raw) == 2 and all(isinstance(x, int) for x in raw):
        return Position(raw[0], raw[1])
    if isinstance(raw, dict) and isinstance(raw.get("ledgerId"), int) \
            and isinstance(raw.get("entryId"), int):
        return Position(raw["ledgerId"], raw["entryId"])
    raise errors.OptionError(
        f"option {key}: position {raw!r} of {topic} is not \"ledgerId:entryId\"")


def _time_ms(opts: dict[str, str], key: str) -> int | None:
    raw = opts.get(key)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise errors.OptionError(
            f"option {key}={raw!r} must be a publish time in epoch milliseconds") from None


def _schema(opts: dict[str, str]) -> tuple[str, dict[str, Any] | None]:
    raw = opts.get("schema")
    kind = opts.get("schema.type")
    definition: dict[str, Any] | None = None
    if raw is not None:
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise errors.OptionError(f"option schema is not JSON: {exc}") from None
        # Pulsar's SchemaInfo form: {"type": "AVRO", "schema": {...}} or the definition alone.
        if isinstance(parsed, dict) and "schema" in parsed and str(parsed.get("type", "")).upper() \
                in ("AVRO", "JSON"):
            kind = kind or str(parsed["type"]).lower()
            parsed = parsed["schema"]
            if isinstance(parsed, str):
                parsed = json.loads(parsed)
        if not isinstance(parsed, dict) or parsed.get("type") != "record":
            raise errors.OptionError(
                "option schema must be an Avro-style record definition "
                '({"type": "record", "name": ..., "fields": [...]})')
        definition = parsed
        kind = kind or "avro"
    kind = (kind or AUTO).lower()
    if kind not in SCHEMA_TYPES:
        raise errors.OptionError(f"option schema.type={kind!r} must be one of {', '.join(SCHEMA_TYPES)}")
    if kind in ("json", "avro") and definition is None:
        raise errors.OptionError(f"schema.type={kind} needs the record definition in option schema")
    return kind, definition


def _topics(opts: dict[str, str]) -> tuple[tuple[str, ...], str | None]:
    given = [k for k in ("topic", "topics", "topicspattern") if k in opts]
    if len(given) != 1:
        raise errors.OptionError(
            "give exactly one of the options topic, topics, topicsPattern "
            f"(got {', '.join(given) or 'none'})")
    if "topicspattern" in opts:
        pattern = opts["topicspattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise errors.OptionError(f"option topicsPattern is not a regular expression: {exc}") \
                from None
        return (), pattern
    raw = opts.get("topic") or opts.get("topics") or ""
    names = tuple(full_topic_name(t) for t in raw.split(",") if t.strip())
    if not names:
        raise errors.OptionError("option topic/topics names no topic")
    return names, None


def parse_read_options(options: Mapping[str, str]) -> ReadOptions:
    opts = _lower(options)
    unknown = sorted(set(opts) - KNOWN_OPTIONS)
    if unknown:
        raise errors.OptionError(f"unknown option(s): {', '.join(unknown)}")
    admin_url = opts.get("admin.url")
    if not admin_url:
        raise errors.OptionError("option admin.url (the broker's http://host:8080) is required")
    topics, pattern = _topics(opts)
    kind, definition = _schema(opts)
    starting = parse_offsets(opts.get("startingoffsets"), "startingOffsets", "earliest")
    ending = parse_offsets(opts.get("endingoffsets"), "endingOffsets", "latest")
    return ReadOptions(
        admin_url=admin_url.rstrip("/"),
        service_url=opts.get("service.url"),
        metadata_url=opts.get("metadata.url"),
        standalone_bookie=opts.get("standalone.bookie"),
        topics=topics,
        topics_pattern=pattern,
        starting=starting,
        ending=ending,
        starting_time_ms=_time_ms(opts, "startingtime"),
        ending_time_ms=_time_ms(opts, "endingtime"),
        schema_type=kind,
        schema_definition=definition,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        entries_per_partition=_positive_int(opts, "entriesperpartition",
                                            ENTRIES_PER_PARTITION_DEFAULT),
        min_partitions=_positive_int(opts, "minpartitions", 1),
        arrow_batch_rows=_positive_int(opts, "arrowbatchrows", ARROW_BATCH_ROWS_DEFAULT),
        publish_time_tolerance_ms=_nonnegative(opts, "publishtime.tolerancems",
                                               PUBLISH_TIME_TOLERANCE_MS_DEFAULT),
        metrics_dir=opts.get("metrics.dir"),
        subscription=opts.get("subscription"),
    )


def _nonnegative(opts: dict[str, str], key: str, default: int) -> int:
    raw = opts.get(key)
    if raw is None:
        return default
    if not raw.strip().isdigit():
        raise errors.OptionError(f"option {key}={raw!r} must be a non-negative integer")
    return int(raw)
