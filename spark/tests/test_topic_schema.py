"""Reading with the topic's registry schema: no `schema` option needed."""

from __future__ import annotations

import json
import struct
import urllib.request
from typing import Any

import pytest
from pulsar.schema import AvroSchema, Double, Integer, JsonSchema, Record, String, StringSchema
from pulsar_spark import errors, topic_schema


def _trade(**extra: Any) -> type:
    """A record named Trade; an evolution keeps the record's name."""
    return type("Trade", (Record,), {"symbol": String(), "price": Double(), **extra})


Trade: Any = _trade()
TradeWithQty: Any = _trade(qty=Integer(required_default=True))  # ["null","int"], default null


def test_avro_topic_reads_as_columns_with_no_schema_option(spark, options_for, client, topic):
    producer = client.create_producer(topic, schema=AvroSchema(Trade), batching_enabled=True,
                                      batching_max_messages=3, batching_max_publish_delay_ms=50)
    for i in range(5):
        producer.send_async(Trade(symbol=f"S{i}", price=float(i)), None)
    producer.flush()
    # A compatible evolution (FULL: a field with a default): version 1. Version 0 messages
    # are decoded with version 0's schema and resolved to the latest.
    evolved = client.create_producer(topic, schema=AvroSchema(TradeWithQty))
    evolved.send(TradeWithQty(symbol="N", price=9.5, qty=7))
    df = spark.read.format("pulsar").options(**options_for(topic=topic)).load()
    assert df.columns[:3] == ["symbol", "price", "qty"]
    rows = sorted((r.symbol, r.price, r.qty) for r in df.collect())
    assert rows == [("N", 9.5, 7)] + [(f"S{i}", float(i), None) for i in range(5)]


def test_json_string_and_primitive_topics(spark, options_for, client, topic, standalone):
    json_topic, string_topic, long_topic = (f"{topic}-json", f"{topic}-str", f"{topic}-long")
    client.create_producer(json_topic, schema=JsonSchema(Trade)).send(
        Trade(symbol="J", price=1.5))
    client.create_producer(string_topic, schema=StringSchema()).send("héllo")
    load = lambda t: spark.read.format("pulsar").options(**options_for(topic=t)).load()
    assert [(r.symbol, r.price) for r in load(json_topic).collect()] == [("J", 1.5)]
    strings = load(string_topic)
    assert dict(strings.dtypes)["value"] == "string"
    assert [r.value for r in strings.collect()] == ["héllo"]

    # No producer in the wheel sends INT64; register it through the admin API and write
    # Pulsar's encoding (8 bytes big-endian) with the data source's writer.
    df = spark.createDataFrame([(2**40,), (-3,)], "value long")
    df.write.format("pulsar").mode("append").options(
        **options_for(topic=long_topic, **{"schema.type": "int64"})).save()
    back = load(long_topic)  # no schema in the registry yet: binary
    assert sorted(struct.unpack(">q", r.value)[0] for r in back.collect()) == [-3, 2**40]
    given = spark.read.format("pulsar").options(
        **options_for(topic=long_topic, **{"schema.type": "int64"})).load()
    assert sorted(r.value for r in given.collect()) == [-3, 2**40]
    local = long_topic.partition("://")[2]
    request = urllib.request.Request(
        f"{standalone.web_url}/admin/v2/schemas/{local}/schema", method="POST",
        data=json.dumps({"type": "INT64", "schema": "", "properties": {}}).encode(),
        headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()
    typed = load(long_topic)  # INT64 in the registry: a long column, no option needed
    assert dict(typed.dtypes)["value"] == "bigint"
    assert sorted(r.value for r in typed.collect()) == [-3, 2**40]


def test_topic_without_schema_reads_binary(spark, options_for, client, topic):
    client.create_producer(topic).send(b"\x00\x01")
    df = spark.read.format("pulsar").options(**options_for(topic=topic)).load()
    assert dict(df.dtypes)["value"] == "binary"
    assert [bytes(r.value) for r in df.collect()] == [b"\x00\x01"]


def test_schema_choice_from_registry_responses() -> None:
    def version(n: int, kind: str, data: str = "") -> dict[str, Any]:
        return {"version": n, "type": kind, "data": data, "timestamp": 0, "properties": {}}

    record = '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}'
    assert topic_schema.from_versions("t", [version(0, "INT64")]).kind == "int64"
    assert topic_schema.from_versions("t", [version(0, "KEY_VALUE", "{}")]).kind == "bytes"
    chosen = topic_schema.from_versions("t", [version(0, "AVRO", record),
                                              version(1, "AVRO", record)])
    assert chosen.kind == "avro" and sorted(chosen.writer_definitions) == [0, 1]
    assert topic_schema.from_versions("t", [version(0, "JSON", record)]).writer_definitions == {}
    with pytest.raises(errors.SchemaError, match="not an Avro record"):
        topic_schema.from_versions("t", [version(0, "JSON", '"string"')])
    with pytest.raises(errors.SchemaError, match="different schemas"):
        topic_schema.common(["a", "b"], [topic_schema.BYTES, topic_schema.TopicSchema("string")])
