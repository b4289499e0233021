"""The DataFrame schema of a topic: payload columns from the `schema` option plus metadata columns.

Avro and JSON schemas are Avro-style record definitions (Pulsar stores JSON
schemas that way too); their top-level fields become columns, nested
records become struct columns. Without a schema the payload is the binary
column `value`; schema.type=string makes it a string column. A reader may be
given any subset of these columns (`check_selection`). Without the `schema`
and `schema.type` options the topic's registry schema decides
(`topic_schema`); STRING and the fixed-width primitive types give a typed
`value` column.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import types as T

from pulsar_spark import errors

METADATA_FIELDS: tuple[T.StructField, ...] = (
    T.StructField("__key", T.StringType(), True),
    T.StructField("__topic", T.StringType(), True),
    T.StructField("__partition", T.IntegerType(), True),
    T.StructField("__message_id", T.StringType(), True),
    T.StructField("__publish_time", T.TimestampType(), True),
    T.StructField("__event_time", T.TimestampType(), True),
    T.StructField("__sequence_id", T.LongType(), True),
    T.StructField("__producer_name", T.StringType(), True),
    T.StructField("__properties", T.MapType(T.StringType(), T.StringType(), True), True),
)
METADATA_NAMES = frozenset(f.name for f in METADATA_FIELDS)

_PRIMITIVES: dict[str, T.DataType] = {
    "boolean": T.BooleanType(), "int": T.IntegerType(), "long": T.LongType(),
    "float": T.FloatType(), "double": T.DoubleType(), "bytes": T.BinaryType(),
    "string": T.StringType(),
}
_LOGICAL: dict[str, T.DataType] = {
    "timestamp-millis": T.TimestampType(), "timestamp-micros": T.TimestampType(),
    "date": T.DateType(),
}


def spark_type(avro: Any, where: str) -> T.DataType:
    """Spark type of an Avro type; nullable unions map to their non-null branch."""
    if isinstance(avro, str):
        if avro in _PRIMITIVES:
            return _PRIMITIVES[avro]
        raise errors.SchemaError(f"{where}: Avro type {avro!r} is not supported")
    if isinstance(avro, list):
        branches = [b for b in avro if b != "null"]
        if len(branches) != 1:
            raise errors.SchemaError(f"{where}: only unions of null and one type are supported")
        return spark_type(branches[0], where)
    if not isinstance(avro, dict):
        raise errors.SchemaError(f"{where}: malformed Avro type {avro!r}")
    logical = avro.get("logicalType")
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    kind = avro.get("type")
    if kind == "record":
        return record_type(avro, where)
    if kind == "enum":
        return T.StringType()
    if kind == "fixed":
        return T.BinaryType()
    if kind == "array":
        return T.ArrayType(spark_type(avro.get("items"), f"{where}[]"), True)
    if kind == "map":
        return T.MapType(T.StringType(), spark_type(avro.get("values"), f"{where}{{}}"), True)
    return spark_type(kind, where)


def record_type(definition: dict[str, Any], where: str = "schema") -> T.StructType:
    fields = definition.get("fields")
    if not isinstance(fields, list):
        raise errors.SchemaError(f"{where}: record has no fields list")
    result = []
    for field in fields:
        name = field.get("name") if isinstance(field, dict) else None
        if not isinstance(name, str):
            raise errors.SchemaError(f"{where}: a field has no name")
        result.append(T.StructField(name, spark_type(field.get("type"), f"{where}.{name}"), True))
    return T.StructType(result)


#: Column type of `value` for the payload types without record definition.
VALUE_TYPES: dict[str, T.DataType] = {
    "bytes": T.BinaryType(), "auto": T.BinaryType(), "string": T.StringType(),
    "int8": T.ByteType(), "int16": T.ShortType(), "int32": T.IntegerType(),
    "int64": T.LongType(), "float": T.FloatType(), "double": T.DoubleType(),
    "boolean": T.BooleanType(),
}


def payload_fields(schema_type: str, definition: dict[str, Any] | None) -> list[T.StructField]:
    if schema_type in VALUE_TYPES:
        return [T.StructField("value", VALUE_TYPES[schema_type], True)]
    assert definition is not None
    fields = list(record_type(definition).fields)
    clashes = [f.name for f in fields if f.name in METADATA_NAMES]
    if clashes:
        raise errors.SchemaError(f"schema fields {clashes} clash with metadata columns")
    return fields


def dataframe_schema(schema_type: str, definition: dict[str, Any] | None) -> T.StructType:
    return T.StructType(payload_fields(schema_type, definition) + list(METADATA_FIELDS))


def check_selection(given: T.StructType, full: T.StructType) -> T.StructType:
    """A schema given to the reader (`.schema(...)`): a subset of the topic's columns.

    Only those columns are produced, which is the Python Data Source API's
    only way to prune columns: the others are never built, and with no
    payload column the payloads are not even decoded.
    """
    types = {f.name: f.dataType for f in full.fields}
    for f in given.fields:
        if f.name not in types:
            raise errors.SchemaError(
                f"column {f.name!r} is not a column of this topic: {list(types)}")
        if f.dataType != types[f.name]:
            raise errors.SchemaError(f"column {f.name!r} is {types[f.name].simpleString()}, "
                                     f"not {f.dataType.simpleString()}")
    return given
