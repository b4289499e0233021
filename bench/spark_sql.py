"""SQL over a topic three ways, same data, same query: rows/s of `SELECT count(*), avg(value)`.

1. the `pulsar` data source, reading ledgers straight from the bookie (all its columns, as
   `load()` gives them: the issue's figure); also printed apart, the same query run the
   way `pulsar sql` runs it (`tables.query`: the source builds only the columns the query
   uses, here `value`);
2. the same rows as a Parquet copy (written once from the data source);
3. consuming the topic with the official client (a Reader) and `createDataFrame`.

Also printed: the floor of the Python Data Source API on this machine, a Python data
source that reads nothing and decodes nothing but yields the data source's own Arrow
record batches of the same rows from memory-mapped files (all columns, and `value`
alone). No Python data source can answer faster than that; its ratio to Parquet bounds
any such source's ratio.

Data: --messages JSON messages of 100-200 bytes, produced in batches of up to
1000 with the official client into a fresh `pulsar standalone` (metadata in a
fresh etcd, so the data source finds ledger metadata through metadata.url).
Spark runs local[N]. Each query runs --rounds times after one warm-up; the best
round counts (a shared machine's noise falls on all three alike).

    python -m bench.spark_sql [--messages 1000000] [--rounds 3] [--master local[2]]
    python -m bench spark_sql

Targets recorded in issue 6: data source >= 0.5x the Parquet scan, >= 10x the consume path.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

QUERY = "SELECT count(*) AS n, avg(value) AS mean FROM t"
SCHEMA = json.dumps({"type": "record", "name": "Reading", "fields": [
    {"name": "id", "type": "long"}, {"name": "sensor", "type": "string"},
    {"name": "value", "type": "double"}, {"name": "note", "type": "string"}]})


def _produce(service_url: str, topic: str, count: int) -> float:
    import pulsar

    client = pulsar.Client(service_url)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=1000,
                                      batching_max_publish_delay_ms=5, max_pending_messages=20000,
                                      block_if_queue_full=True)
    started = time.perf_counter()
    for i in range(count):
        record = {"id": i, "sensor": f"sensor-{i % 97:03d}", "value": (i % 1000) / 10.0,
                  "note": "x" * (40 + i % 60)}
        producer.send_async(json.dumps(record).encode(), None)
    producer.flush()
    elapsed = time.perf_counter() - started
    producer.close()
    client.close()
    return elapsed


def _best(rounds: int, action: Callable[[], Any]) -> tuple[float, Any]:
    action()  # warm-up: Python workers, JIT of the JVM side
    best, result = float("inf"), None
    for _ in range(rounds):
        started = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - started)
    return best, result


def _answer(rows: Any) -> tuple[int, float]:
    ((count, mean),) = [tuple(r) for r in rows]
    return int(count), float(mean)


def _same(rows: Any, other: Any) -> bool:
    """Same count; same mean up to the rounding of summing doubles in another order."""
    (count, mean), (count2, mean2) = _answer(rows), _answer(other)
    return count == count2 and math.isclose(mean, mean2, rel_tol=1e-12)


def _consume_path(spark: Any, service_url: str, topic: str, count: int) -> tuple[Any, float]:
    import pulsar

    client = pulsar.Client(service_url)
    reader = client.create_reader(topic, pulsar.MessageId.earliest, receiver_queue_size=5000)
    started = time.perf_counter()
    rows = []
    for _ in range(count):
        record = json.loads(reader.read_next(timeout_millis=30_000).data())
        rows.append((record["id"], record["sensor"], record["value"], record["note"]))
    reader.close()
    client.close()
    df = spark.createDataFrame(rows, "id long, sensor string, value double, note string")
    df.createOrReplaceTempView("t")
    result = spark.sql(QUERY).collect()
    return result, time.perf_counter() - started


def _floor_query(spark: Any, options: dict[str, str], work: pathlib.Path,
                 columns: list[str] | None = None) -> Callable[[], Any]:
    """The query over a Python data source that replays the pulsar source's record batches
    (of all its columns, or of `columns`)."""
    import pyarrow as pa
    from pulsar_spark import source
    from pyspark.sql import datasource as ds
    from pyspark.sql import types as T

    pulsar = source.PulsarDataSource(options)
    schema = pulsar.schema()
    if columns is not None:
        schema = T.StructType([f for f in schema.fields if f.name in columns])
    name = "pulsar_bench_replay_" + "_".join(columns or ["all"])
    reader = pulsar.reader(schema)
    paths = []
    for index, partition in enumerate(reader.partitions()):
        batches = list(reader.read(partition))
        if not batches:
            continue
        paths.append(str(work / f"{name}-{index}.arrow"))
        with pa.OSFile(paths[-1], "wb") as sink, \
                pa.ipc.new_file(sink, batches[0].schema) as writer:
            for batch in batches:
                writer.write_batch(batch)

    # Defined here so that Spark's workers get them by value (bench/ is not installed).
    class ReplayReader(ds.DataSourceReader):
        def partitions(self) -> list[ds.InputPartition]:
            return [ds.InputPartition(p) for p in paths]

        def read(self, partition: ds.InputPartition) -> Any:
            with pa.memory_map(partition.value) as mapped:
                stored = pa.ipc.open_file(mapped)
                for i in range(stored.num_record_batches):
                    yield stored.get_batch(i)

    class Replay(ds.DataSource):
        @classmethod
        def name(cls) -> str:
            return name

        def schema(self) -> Any:
            return schema

        def reader(self, schema: Any) -> ds.DataSourceReader:
            return ReplayReader()

    spark.dataSource.register(Replay)

    def query() -> Any:
        spark.read.format(name).load().createOrReplaceTempView("t")
        return spark.sql(QUERY).collect()

    return query


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench.spark_sql")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--consume-messages", type=int, default=None,
                        help="messages the consume path reads (default: all; its rate is "
                        "measured on what it reads)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--dir", help="work directory (default: a fresh temporary one)")
    args = parser.parse_args(argv)

    from pulsar_broker import testing as broker_testing
    from pulsar_common import etcd_server
    from pulsar_spark import counters, session, tables

    work = pathlib.Path(args.dir or tempfile.mkdtemp(prefix="bench-spark-"))
    etcd = etcd_server.EtcdServer(work / "etcd")
    etcd.start()
    standalone = broker_testing.StandaloneProcess(work / "standalone", {
        "journalSyncData": "false", "metadataStoreUrl": etcd.url,
        "defaultRetentionTimeInMinutes": "-1", "defaultRetentionSizeInMB": "-1"})
    spark = None
    try:
        standalone.start()
        topic = "persistent://public/default/bench-readings"
        produce_s = _produce(standalone.service_url, topic, args.messages)
        print(f"produced {args.messages} messages in {produce_s:.1f}s "
              f"({args.messages / produce_s:,.0f} msg/s)", flush=True)
        spark = session.local_session(args.master, {"spark.sql.shuffle.partitions": "2",
                                                    "spark.driver.memory": "2g"})
        metrics = work / "metrics"
        options = {"admin.url": standalone.web_url, "service.url": standalone.service_url,
                   "metadata.url": etcd.url, "topic": topic, "schema": SCHEMA,
                   "schema.type": "json", "entriesPerPartition": "500",
                   "metrics.dir": str(metrics)}

        def source_query() -> Any:
            df = spark.read.format("pulsar").options(**options).load()
            df.createOrReplaceTempView("t")
            return spark.sql(QUERY).collect()

        source_s, source_rows = _best(args.rounds, source_query)
        read = counters.load(metrics)

        def sql_query() -> Any:
            # As `pulsar sql` runs it: planned, then the table registered with the columns used.
            return tables.query(spark, QUERY, [tables.Table(topic, "t", None)], options,
                                {}).collect()

        sql_s, sql_rows = _best(args.rounds, sql_query)
        floor_s, floor_rows = _best(args.rounds, _floor_query(spark, options, work))
        floor_value_s, _ = _best(args.rounds, _floor_query(spark, options, work, ["value"]))
        parquet_dir = work / "parquet"
        spark.read.format("pulsar").options(**options).load() \
            .select("id", "sensor", "value", "note").write.parquet(str(parquet_dir))

        def parquet_query() -> Any:
            spark.read.parquet(str(parquet_dir)).createOrReplaceTempView("t")
            return spark.sql(QUERY).collect()

        parquet_s, parquet_rows = _best(args.rounds, parquet_query)
        consume_count = args.consume_messages or args.messages
        consume_rows, consume_s = _consume_path(spark, standalone.service_url, topic,
                                                consume_count)
        n = args.messages
        result = {
            "messages": n, "master": args.master,
            "source_rows_per_s": n / source_s, "parquet_rows_per_s": n / parquet_s,
            "consume_rows_per_s": consume_count / consume_s,
            "source_s": source_s, "parquet_s": parquet_s, "consume_s": consume_s,
            "sql_rows_per_s": n / sql_s, "sql_s": sql_s,
            "sql_vs_parquet": parquet_s / sql_s,
            "sql_vs_consume": (n / sql_s) / (consume_count / consume_s),
            "floor_s": floor_s, "floor_vs_parquet": parquet_s / floor_s,
            "floor_value_s": floor_value_s, "floor_value_vs_parquet": parquet_s / floor_value_s,
            "source_vs_parquet": parquet_s / source_s,
            "source_vs_consume": (n / source_s) / (consume_count / consume_s),
            "answers": {"source": _answer(source_rows), "parquet": _answer(parquet_rows),
                        "consume": _answer(consume_rows), "sql": _answer(sql_rows),
                        "floor": _answer(floor_rows)},
            "same_answer": _same(source_rows, parquet_rows) and _same(sql_rows, source_rows)
            and _same(floor_rows, source_rows)
            and (consume_count != n or _same(consume_rows, source_rows)),
            "entries_read_per_round": read.entries_read / (args.rounds + 1),
        }
        print(json.dumps(result, indent=2), flush=True)
        print(f"data source {result['source_rows_per_s']:,.0f} rows/s | parquet "
              f"{result['parquet_rows_per_s']:,.0f} rows/s | consume+createDataFrame "
              f"{result['consume_rows_per_s']:,.0f} rows/s | source/parquet "
              f"{result['source_vs_parquet']:.2f}x (target >= 0.5x) | source/consume "
              f"{result['source_vs_consume']:.1f}x (target >= 10x)", flush=True)
        print(f"as pulsar sql runs it (reads only `value`): {result['sql_rows_per_s']:,.0f} "
              f"rows/s | {result['sql_vs_parquet']:.2f}x parquet | "
              f"{result['sql_vs_consume']:.1f}x consume", flush=True)
        print(f"floor of the Python Data Source API (same Arrow batches replayed, no reads, "
              f"no decoding): {floor_s:.2f}s = {result['floor_vs_parquet']:.2f}x parquet; of "
              f"`value` alone: {floor_value_s:.2f}s = {result['floor_value_vs_parquet']:.2f}x "
              f"parquet", flush=True)
    finally:
        if spark is not None:
            spark.stop()
        standalone.stop()
        etcd.stop()
        if not args.dir:
            shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    run(sys.argv[1:])


if __name__ == "__main__":
    main()
