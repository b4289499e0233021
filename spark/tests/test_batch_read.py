"""Batch reads through the data source against a real standalone: rows, metadata columns, LAC."""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest

JSON_SCHEMA = {"type": "record", "name": "Reading", "fields": [
    {"name": "sensor", "type": "string"},
    {"name": "value", "type": "double"},
    {"name": "count", "type": ["null", "long"]},
]}


def _produce_json(client: Any, topic: str, n: int, batch: int = 4) -> list[dict[str, Any]]:
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=batch,
                                      batching_max_publish_delay_ms=50, producer_name="p-json")
    sent = []
    for i in range(n):
        record = {"sensor": f"s{i % 3}", "value": i * 1.5, "count": None if i % 5 == 0 else i}
        producer.send_async(json.dumps(record).encode(), None, partition_key=f"k{i % 3}",
                            properties={"i": str(i)}, event_timestamp=1_700_000_000_000 + i)
        sent.append(record)
    producer.flush()
    producer.close()
    return sent


def test_full_scan_returns_every_message_with_its_metadata(spark, options_for, client, topic):
    sent = _produce_json(client, topic, 23)
    df = (spark.read.format("pulsar")
          .options(**options_for(topic=topic, schema=json.dumps(JSON_SCHEMA), **{"schema.type": "json", "entriesPerPartition": "2"}))
          .load())
    rows = sorted(df.collect(), key=lambda r: int(r["__properties"]["i"]))
    assert len(rows) == 23
    for i, row in enumerate(rows):
        assert {k: row[k] for k in ("sensor", "value", "count")} == sent[i]
        assert row["__key"] == f"k{i % 3}"
        assert row["__topic"] == topic
        assert row["__partition"] == -1
        assert row["__producer_name"] == "p-json"
        assert row["__properties"] == {"i": str(i)}
        assert row["__event_time"] == datetime.datetime(2023, 11, 14, 22, 13, 20) + \
            datetime.timedelta(milliseconds=i)
        assert row["__publish_time"] is not None
        _ledger, _entry, partition, index = row["__message_id"].split(":")
        assert partition == "-1" and int(index) >= 0
    # Sequence ids are the producer's, one per message, in order.
    assert [r["__sequence_id"] for r in rows] == list(range(23))
    # Batches of 4 over ledgers of 5 entries: the topic spans more than one ledger.
    assert len({r["__message_id"].split(":")[0] for r in rows}) > 1


def test_message_acknowledged_just_before_the_query_is_visible(spark, options_for, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(7):
        producer.send(f"m{i}".encode())
    options = options_for(topic=topic, **{"schema.type": "string"})
    df = spark.read.format("pulsar").options(**options).load()
    assert sorted(r.value for r in df.collect()) == [f"m{i}" for i in range(7)]
    producer.send(b"newest")  # acknowledged now, the only entry of the open ledger
    # A loaded DataFrame is planned once; a new query sees the topic as it is now.
    df = spark.read.format("pulsar").options(**options).load()
    values = [r.value for r in df.select("value").collect()]
    assert "newest" in values and len(values) == 8
    producer.close()


def test_no_schema_gives_binary_value(spark, options_for, client, topic):
    producer = client.create_producer(topic)
    producer.send(b"\x00\x01raw")
    producer.close()
    df = spark.read.format("pulsar").options(**options_for(topic=topic)).load()
    assert df.schema["value"].dataType.typeName() == "binary"
    assert [bytes(r.value) for r in df.collect()] == [b"\x00\x01raw"]


@pytest.mark.parametrize("compression", ["LZ4", "ZSTD"])
def test_compressed_batches_are_unpacked(spark, options_for, client, topic, compression):
    import pulsar

    producer = client.create_producer(
        topic, compression_type=getattr(pulsar.CompressionType, compression),
        batching_enabled=True, batching_max_messages=50, batching_max_publish_delay_ms=100)
    for i in range(40):
        producer.send_async(f"value-{i}".encode() * 4, None)
    producer.flush()
    producer.close()
    df = spark.read.format("pulsar").options(**options_for(
        topic=topic, **{"schema.type": "string"})).load()
    assert sorted(r.value for r in df.collect()) == sorted(f"value-{i}" * 4 for i in range(40))


def test_topics_pattern_reads_every_matching_topic(spark, options_for, client, topic):
    for suffix in ("a", "b"):
        producer = client.create_producer(f"{topic}-{suffix}")
        producer.send(suffix.encode())
        producer.close()
    df = spark.read.format("pulsar").options(**options_for(
        topicsPattern=f"{topic}-.*", **{"schema.type": "string"})).load()
    assert sorted((r["__topic"], r.value) for r in df.collect()) == \
        [(f"{topic}-a", "a"), (f"{topic}-b", "b")]


def test_standalone_bookie_option_reads_without_the_metadata_store(spark, standalone, client,
                                                                  topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(7):  # more than one ledger (5 entries per ledger in these tests)
        producer.send(f"m{i}".encode())
    producer.close()
    options = {"admin.url": standalone.web_url, "topic": topic, "schema.type": "string",
               "standalone.bookie": f"127.0.0.1:{standalone.bookie_port}"}
    df = spark.read.format("pulsar").options(**options).load()
    assert sorted(r.value for r in df.collect()) == [f"m{i}" for i in range(7)]


def test_ledger_metadata_from_the_brokers_internal_stats_is_enough(spark, standalone, client,
                                                                   topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(7):
        producer.send(f"m{i}".encode())
    producer.close()
    # Only the admin URL: the broker's internalStats?metadata=true names each ledger's bookies.
    options = {"admin.url": standalone.web_url, "topic": topic, "schema.type": "string"}
    df = spark.read.format("pulsar").options(**options).load()
    assert sorted(r.value for r in df.collect()) == [f"m{i}" for i in range(7)]


def test_a_schema_given_to_the_reader_selects_columns(spark, options_for, client, topic):
    _produce_json(client, topic, 9)
    opts = options_for(topic=topic, schema=json.dumps(JSON_SCHEMA), **{"schema.type": "json"})
    full = spark.read.format("pulsar").options(**opts).load()
    expected = sorted((r["__message_id"], r["value"], r["__key"]) for r in full.collect())
    picked = (spark.read.format("pulsar").options(**opts)
              .schema("__key string, value double, __message_id string").load())
    assert picked.columns == ["__key", "value", "__message_id"]
    assert sorted((r["__message_id"], r["value"], r["__key"]) for r in picked.collect()) == expected
    # No payload column: the payloads are not decoded, rows still count.
    only_time = spark.read.format("pulsar").options(**opts).schema("__publish_time timestamp")
    assert only_time.load().count() == 9
    with pytest.raises(Exception, match="not a column of this topic"):
        spark.read.format("pulsar").options(**opts).schema("nope long").load().collect()
    with pytest.raises(Exception, match="is double, not string"):
        spark.read.format("pulsar").options(**opts).schema("value string").load().collect()
