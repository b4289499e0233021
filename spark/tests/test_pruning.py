"""Publish-time pushdown and partition pruning: right rows, fewer entries read."""

from __future__ import annotations

import datetime
import time

from pulsar_spark import counters


def _wait_for_clock_past(ms: int) -> None:
    """Publish times come from the client's clock: let it move past `ms` (no fixed sleep)."""
    while time.time() * 1000 <= ms:
        time.sleep(0.005)


def test_publish_time_filter_returns_the_subset_and_reads_fewer_entries(
        spark, options_for, client, topic, tmp_path):
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(20):
        producer.send(f"early-{i}".encode())
    mark_ms = int(time.time() * 1000)
    _wait_for_clock_past(mark_ms + 20)
    cut_ms = int(time.time() * 1000)
    _wait_for_clock_past(cut_ms + 20)
    for i in range(6):
        producer.send(f"late-{i}".encode())
    producer.close()
    cut = datetime.datetime.fromtimestamp(cut_ms / 1000, datetime.UTC).replace(tzinfo=None)

    full_dir, pruned_dir = tmp_path / "full", tmp_path / "pruned"
    full = spark.read.format("pulsar").options(**options_for(
        topic=topic, **{"schema.type": "string", "metrics.dir": str(full_dir)})).load()
    assert full.count() == 26
    pruned = spark.read.format("pulsar").options(**options_for(
        topic=topic, **{"schema.type": "string", "metrics.dir": str(pruned_dir),
                        "publishTime.toleranceMs": "0"})).load()
    late = sorted(r.value for r in pruned.where(pruned["__publish_time"] >= cut).collect())
    assert late == [f"late-{i}" for i in range(6)]

    read_full, read_pruned = counters.load(full_dir), counters.load(pruned_dir)
    assert read_full.entries_read == 26
    assert read_pruned.entries_read == 6
    # The search plus the read cost fewer entry reads than the full scan.
    assert 0 < read_pruned.entries_probed
    assert read_pruned.entries_probed + read_pruned.entries_read < read_full.entries_read


def test_starting_and_ending_time_options_bound_the_scan(spark, options_for, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    start_ms = int(time.time() * 1000) + 1
    _wait_for_clock_past(start_ms)
    producer.send(b"inside")
    end_ms = int(time.time() * 1000) + 1
    _wait_for_clock_past(end_ms)
    producer.send(b"after")
    producer.close()
    df = spark.read.format("pulsar").options(**options_for(
        topic=topic, startingTime=str(start_ms), endingTime=str(end_ms),
        **{"schema.type": "string"})).load()
    assert [r.value for r in df.collect()] == ["inside"]


def test_partition_filter_prunes_partitions(spark, options_for, client, create_partitioned,
                                            topic, tmp_path):
    create_partitioned(topic, 3)
    producers = [client.create_producer(f"{topic}-partition-{i}", batching_enabled=False)
                 for i in range(3)]
    for i, producer in enumerate(producers):
        for j in range(4 + i):
            producer.send(f"p{i}-{j}".encode())
        producer.close()
    df = spark.read.format("pulsar").options(**options_for(
        topic=topic, **{"schema.type": "string", "metrics.dir": str(tmp_path / "m")})).load()
    rows = df.where(df["__partition"] == 1).collect()
    assert sorted(r.value for r in rows) == [f"p1-{j}" for j in range(5)]
    assert {r["__topic"] for r in rows} == {topic}
    assert counters.load(tmp_path / "m").entries_read == 5
    fresh = spark.read.format("pulsar").options(**options_for(
        topic=topic, **{"schema.type": "string"})).load()
    by_partition = {r["__partition"]: r["count"]
                    for r in fresh.groupBy("__partition").count().collect()}
    assert by_partition == {0: 4, 1: 5, 2: 6}


def test_a_partition_never_written_to_reads_as_empty(spark, options_for, client,
                                                     create_partitioned, topic):
    create_partitioned(topic, 3)
    producer = client.create_producer(f"{topic}-partition-1", batching_enabled=False)
    producer.send(b"only")
    producer.close()
    df = spark.read.format("pulsar").options(**options_for(
        topic=topic, **{"schema.type": "string"})).load()
    assert [(r["__partition"], r.value) for r in df.collect()] == [(1, "only")]
