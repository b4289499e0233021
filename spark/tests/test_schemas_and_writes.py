"""Avro payloads written by the official client's AvroSchema, the writer, and the CLI end to end."""

from __future__ import annotations

import argparse
import csv
import io
import json
from contextlib import redirect_stdout

from pulsar.schema import AvroSchema, Double, Integer, Record, String
from pulsar_spark import cli, counters


class Trade(Record):
    symbol = String()
    price = Double()
    qty = Integer()


def test_avro_records_from_the_official_client_become_columns(spark, options_for, client, topic):
    schema = AvroSchema(Trade)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=3,
                                      batching_max_publish_delay_ms=50)
    trades = [Trade(symbol=f"S{i % 2}", price=10.0 + i, qty=i) for i in range(8)]
    for trade in trades:
        # Encoded by the official client's AvroSchema (schemaless Avro binary) but sent as
        # bytes: the topic has no registry schema, so the reader is given it as an option.
        producer.send_async(schema.encode(trade), None, partition_key=trade.symbol)
    producer.flush()
    producer.close()
    definition = schema.schema_info().schema()
    df = spark.read.format("pulsar").options(**options_for(
        topic=topic, schema=definition, **{"schema.type": "avro"})).load()
    assert df.columns[:3] == ["symbol", "price", "qty"]
    rows = sorted(df.collect(), key=lambda r: r.qty)
    assert [(r.symbol, r.price, r.qty, r["__key"]) for r in rows] == \
        [(t.symbol, t.price, t.qty, t.symbol) for t in trades]
    totals = {r.symbol: r.total for r in df.groupBy("symbol").sum("qty")
              .withColumnRenamed("sum(qty)", "total").collect()}
    assert totals == {"S0": 0 + 2 + 4 + 6, "S1": 1 + 3 + 5 + 7}


def test_write_then_read_back_with_metadata_columns(spark, options_for, topic):
    rows = [(f"v{i}", f"k{i % 2}", {"n": str(i)}) for i in range(12)]
    df = spark.createDataFrame(rows, "value string, __key string, __properties map<string,string>")
    df.write.format("pulsar").mode("append").options(**options_for(topic=topic)).save()
    back = spark.read.format("pulsar").options(**options_for(
        topic=topic, **{"schema.type": "string"})).load()
    got = sorted((r.value, r["__key"], r["__properties"]) for r in back.collect())
    assert got == sorted(rows)


def test_write_with_a_json_schema_reads_back_as_columns(spark, options_for, topic):
    definition = json.dumps({"type": "record", "name": "P", "fields": [
        {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]})
    df = spark.createDataFrame([("ann", 31), ("bob", 42)], "name string, age int")
    opts = options_for(topic=topic, schema=definition, **{"schema.type": "json"})
    df.write.format("pulsar").mode("append").options(**opts).save()
    back = spark.read.format("pulsar").options(**opts).load()
    assert sorted((r.name, r.age) for r in back.collect()) == [("ann", 31), ("bob", 42)]


def _run_cli(*argv: str) -> str:
    parser = argparse.ArgumentParser()
    runner = cli.add_arguments(parser)
    out = io.StringIO()
    with redirect_stdout(out):
        assert runner(parser.parse_args(list(argv))) == 0
    return out.getvalue()


def test_pulsar_sql_queries_topics_by_their_pulsar_names(spark, standalone, etcd, client, topic):
    local = topic.rsplit("/", 1)[1]
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(json.dumps({"n": i}).encode(), partition_key="even" if i % 2 == 0 else "odd")
    producer.close()
    common = ["--admin-url", standalone.web_url, "--service-url", standalone.service_url,
              "--metadata-url", etcd.url, "--schema-type", "string", "--no-progress",
              "--master", "local[2]"]
    text = _run_cli(f'SELECT __key, count(*) AS n FROM public.default."{local}" '
                    "GROUP BY __key ORDER BY __key", *common)
    assert "| even  | 3 |" in text and "| odd   | 2 |" in text and "2 row(s)" in text
    csv_text = _run_cli(f"SELECT value FROM `public/default/{local}` ORDER BY value",
                        "--output", "csv", *common)
    assert list(csv.reader(io.StringIO(csv_text))) == \
        [["value"]] + [[json.dumps({"n": i})] for i in range(5)]
    json_text = _run_cli(f"SELECT count(*) AS c FROM {local.replace('-', '_')}",
                         "--output", "json", *common)
    assert json.loads(json_text) == {"c": 5}
    listed = _run_cli("--tables", *common)
    assert f'public.default."{local}"' in listed


def test_pulsar_sql_reads_in_as_many_partitions_as_spark_runs_tasks(
        spark, standalone, etcd, client, topic, tmp_path):
    local = topic.rsplit("/", 1)[1]
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(4):  # one ledger (the test standalone rolls over every 5 entries)
        producer.send(str(i).encode())
    producer.close()
    common = ["--admin-url", standalone.web_url, "--service-url", standalone.service_url,
              "--metadata-url", etcd.url, "--schema-type", "string", "--no-progress",
              "--master", "local[2]", "--output", "json"]
    metrics = tmp_path / "metrics"
    text = _run_cli(f"SELECT count(*) AS c FROM `public/default/{local}`", *common,
                    "--option", f"metrics.dir={metrics}")
    assert json.loads(text) == {"c": 4}
    assert counters.load(metrics).partitions_planned == 2
    alone = tmp_path / "alone"
    _run_cli(f"SELECT count(*) AS c FROM `public/default/{local}`", *common,
             "--option", f"metrics.dir={alone}", "--option", "minPartitions=1")
    assert counters.load(alone).partitions_planned == 1


def test_pulsar_sql_reports_an_unknown_namespace_clearly(standalone, capsys):
    parser = argparse.ArgumentParser()
    runner = cli.add_arguments(parser)
    code = runner(parser.parse_args(["SELECT 1", "--admin-url", standalone.web_url,
                                     "--namespace", "public/nope"]))
    assert code == 2
    assert "public/nope" in capsys.readouterr().err




def test_job_entry_point_writes_the_query_result(spark, standalone, etcd, client, topic,
                                                 tmp_path):
    from pulsar_spark import job

    local = topic.rsplit("/", 1)[1]
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(4):
        producer.send(f"m{i}".encode(), partition_key="k" if i % 2 else "j")
    producer.close()
    spark.conf.set("spark.pulsar.admin.url", standalone.web_url)  # as the SparkApplication sets
    spark.conf.set("spark.pulsar.metadata.url", etcd.url)
    out = tmp_path / "result"
    query = f'SELECT __key, count(*) AS n FROM public.default."{local}" GROUP BY __key'
    code = job.main(["--query", query, "--output", str(out), "--option", "schema.type=string"])
    assert code == 0
    rows = {r["__key"]: r["n"] for r in spark.read.parquet(str(out)).collect()}
    assert rows == {"j": 2, "k": 2}
