"""Streaming reads with a checkpoint: every message lands in the sink exactly once across restarts."""

from __future__ import annotations


def _run_available_now(spark, options, checkpoint, sink) -> None:
    stream = spark.readStream.format("pulsar").options(**options).load()
    query = (stream.select("value", "__message_id", "__partition").writeStream
             .format("parquet").option("checkpointLocation", str(checkpoint))
             .option("path", str(sink)).trigger(availableNow=True).start())
    query.awaitTermination(180)
    assert query.exception() is None
    assert not query.isActive


def test_checkpointed_stream_processes_each_message_once_across_a_restart(
        spark, options_for, client, create_partitioned, topic, tmp_path):
    create_partitioned(topic, 2)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=3,
                                      batching_max_publish_delay_ms=20)
    for i in range(10):
        producer.send_async(f"first-{i}".encode(), None, partition_key=str(i))
    producer.flush()
    options = options_for(topic=topic, **{"schema.type": "string"})
    checkpoint, sink = tmp_path / "checkpoint", tmp_path / "sink"
    _run_available_now(spark, options, checkpoint, sink)
    assert spark.read.parquet(str(sink)).count() == 10

    for i in range(7):  # more messages while the query is down, then restart it
        producer.send_async(f"second-{i}".encode(), None, partition_key=str(i))
    producer.flush()
    producer.close()
    _run_available_now(spark, options, checkpoint, sink)
    rows = spark.read.parquet(str(sink)).collect()
    values = sorted(r.value for r in rows)
    assert values == sorted([f"first-{i}" for i in range(10)] + [f"second-{i}" for i in range(7)])
    assert len({(r["__partition"], r["__message_id"]) for r in rows}) == 17
    assert {r["__partition"] for r in rows} == {0, 1}


def test_stream_starting_at_latest_sees_only_new_messages(spark, options_for, client, topic,
                                                          tmp_path):
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"old")
    options = options_for(topic=topic, startingOffsets="latest", **{"schema.type": "string"})
    checkpoint, sink = tmp_path / "checkpoint", tmp_path / "sink"
    _run_available_now(spark, options, checkpoint, sink)  # fixes the starting offset
    producer.send(b"new")
    producer.close()
    _run_available_now(spark, options, checkpoint, sink)
    assert [r.value for r in spark.read.parquet(str(sink)).collect()] == ["new"]


def test_durable_subscription_follows_the_committed_offset(spark, options_for, client, topic,
                                                           standalone, tmp_path):
    import json
    import urllib.request

    path = topic.replace("persistent://", "persistent/")

    def cursor() -> dict:
        with urllib.request.urlopen(f"{standalone.web_url}/admin/v2/{path}/internalStats") as r:
            return json.load(r)["cursors"]["spark-stream"]

    producer = client.create_producer(topic, batching_enabled=False)
    first = [producer.send(f"a{i}".encode()) for i in range(3)]
    options = options_for(topic=topic, subscription="spark-stream", **{"schema.type": "string"})
    checkpoint, sink = tmp_path / "checkpoint", tmp_path / "sink"
    _run_available_now(spark, options, checkpoint, sink)
    # Created at the initial offset (earliest): nothing released yet.
    assert cursor()["markDeletePosition"].endswith(":-1")
    producer.send(b"b0")
    producer.close()
    _run_available_now(spark, options, checkpoint, sink)
    # Spark signals a batch complete when it starts the next one: the first batch's end is
    # now the subscription's position, so retention keeps only what follows it.
    last = first[-1]
    assert cursor()["markDeletePosition"] == f"{last.ledger_id()}:{last.entry_id()}"
    assert spark.read.parquet(str(sink)).count() == 4
