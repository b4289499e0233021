"""Bad options, unknown topics and deleted offsets fail the query with a clear message."""

from __future__ import annotations

import json

import pytest
from pyspark.errors import PySparkException


def _load_error(spark, options) -> str:
    with pytest.raises(PySparkException) as caught:
        spark.read.format("pulsar").options(**options).load().collect()
    return str(caught.value)


def test_unknown_topic(spark, options_for):
    message = _load_error(spark, options_for(topic="persistent://public/default/no-such-topic"))
    assert "TopicNotFoundError" in message and "no-such-topic does not exist" in message


def test_missing_admin_url_and_unknown_option(spark, options_for):
    assert "option admin.url" in _load_error(spark, {"topic": "t"})
    message = _load_error(spark, options_for(topic="t", startingOffset="earliest"))
    assert "unknown option(s): startingoffset" in message


def test_bad_offsets_and_schema(spark, options_for):
    assert "startingOffsets" in _load_error(spark, options_for(topic="t",
                                                                startingOffsets="yesterday"))
    assert "record definition" in _load_error(spark, options_for(topic="t",
                                                                  schema='{"type": "string"}'))
    assert "schema.type" in _load_error(spark, options_for(topic="t", **{"schema.type": "xml"}))


def test_offset_deleted_by_retention_fails_unless_failondataloss_is_false(spark, options_for,
                                                                         client, topic):
    other = client.create_producer(topic + "-other")
    other.send(b"x")  # makes sure ledger ids below this topic's first ledger exist
    other.close()
    producer = client.create_producer(topic, batching_enabled=False)
    first = producer.send(b"m0")
    for i in range(1, 3):
        producer.send(f"m{i}".encode())
    producer.close()
    # An offset in a ledger below the topic's oldest one names entries retention deleted.
    gone = json.dumps({topic: f"{first.ledger_id() - 1}:0"})
    message = _load_error(spark, options_for(topic=topic, startingOffsets=gone))
    assert "DataLossError" in message and "failOnDataLoss=false" in message
    df = spark.read.format("pulsar").options(**options_for(
        topic=topic, startingOffsets=gone, failOnDataLoss="false",
        **{"schema.type": "string"})).load()
    assert sorted(r.value for r in df.collect()) == ["m0", "m1", "m2"]


def test_ending_offsets_bound_a_batch_read(spark, options_for, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(6)]
    producer.close()
    start = f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    end = f"{ids[4].ledger_id()}:{ids[4].entry_id()}"
    df = spark.read.format("pulsar").options(**options_for(
        topic=topic, startingOffsets=json.dumps({topic: start}),
        endingOffsets=json.dumps({topic: end}), **{"schema.type": "string"})).load()
    assert sorted(r.value for r in df.collect()) == ["m1", "m2", "m3"]
