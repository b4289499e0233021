"""Column pruning of SQL over topics (`tables.query`, used by `pulsar sql` and the job).

Each query runs over views narrowed to the columns it uses; the answer must
be the one the full tables give, and the views must hold only those columns.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pulsar_spark import counters, pruning, tables

SCHEMA = json.dumps({"type": "record", "name": "Reading", "fields": [
    {"name": "id", "type": "long"}, {"name": "sensor", "type": "string"},
    {"name": "value", "type": "double"}]})


@pytest.fixture
def readings(spark: Any, options_for: Any, client: Any, topic: str) -> dict[str, Any]:
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=7)
    for i in range(40):
        producer.send_async(json.dumps({"id": i, "sensor": f"s{i % 3}", "value": i / 2}).encode(),
                            None, partition_key=f"k{i % 4}")
    producer.flush()
    producer.close()
    table = tables.Table(topic, topic.partition("://")[2], "readings")
    options = options_for(schema=SCHEMA, **{"schema.type": "json"})
    return {"table": table, "options": options}


def _run(spark: Any, readings: dict[str, Any], sql: str) -> tuple[list[Any], list[str]]:
    """(the rows of `sql` over pruned views, the columns the view was left with)."""
    df = tables.query(spark, sql, [readings["table"]], readings["options"], {})
    rows = sorted((tuple(r) for r in df.collect()), key=repr)
    return rows, spark.table("readings").columns


def _full(spark: Any, readings: dict[str, Any], sql: str) -> list[Any]:
    tables.register(spark, [readings["table"]], readings["options"], {})
    return sorted((tuple(r) for r in spark.sql(sql).collect()), key=repr)


@pytest.mark.parametrize(("sql", "columns"), [
    ("SELECT count(*), avg(value) FROM readings", ["value"]),
    ("SELECT count(*) FROM readings", [pruning.PLACEHOLDER_COLUMN]),
    ("SELECT sensor, max(id) FROM readings WHERE __key = 'k1' GROUP BY sensor",
     ["id", "sensor", "__key"]),
    # Columns a subquery names stay, even those the optimizer would drop.
    ("SELECT a FROM (SELECT id AS a, sensor FROM readings) WHERE a > 30", ["id", "sensor"]),
    # A subquery in an expression reads the same view: its columns count too.
    ("SELECT id FROM readings WHERE id IN (SELECT id FROM readings WHERE sensor = 's1')",
     ["id", "sensor"]),
    ("SELECT id FROM readings UNION ALL SELECT id + 100 FROM readings", ["id"]),
    ("SELECT a.id, b.sensor FROM readings a JOIN readings b ON a.id = b.id + 1 ORDER BY a.id",
     ["id", "sensor"]),
])
def test_a_query_reads_only_the_columns_it_uses_and_gets_the_full_answer(
        spark, readings, sql, columns):
    rows, kept = _run(spark, readings, sql)
    assert kept == columns
    assert rows == _full(spark, readings, sql)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM readings",
    "TABLE readings",
    "WITH x AS (TABLE readings) SELECT avg(value) FROM x",
    "TABLE readings UNION ALL TABLE readings",
])
def test_queries_whose_columns_are_not_certain_keep_every_column(spark, readings, sql):
    rows, kept = _run(spark, readings, sql)
    assert len(kept) == 12
    assert rows == _full(spark, readings, sql)


def test_publish_time_pushdown_still_applies_to_a_pruned_read(spark, readings, tmp_path):
    sql = ("SELECT count(*) FROM readings "
           "WHERE __publish_time >= TIMESTAMP '2000-01-01 00:00:00'")
    rows, kept = _run(spark, readings, sql)
    assert kept == ["__publish_time"]
    assert rows == [(40,)]
    # A bound past every message: the pushdown leaves no entry to read.
    readings["options"] = {**readings["options"], "metrics.dir": str(tmp_path / "m")}
    rows, kept = _run(spark, readings, sql.replace("2000-01-01", "2999-01-01"))
    assert (rows, kept) == ([(0,)], ["__publish_time"])
    read = counters.load(tmp_path / "m")
    assert read.entries_probed > 0  # the counters were written: the bound was looked up
    assert read.entries_read == 0


@pytest.mark.parametrize("sql", [
    # Correlated subqueries: the outer columns they use count for the outer relation.
    "SELECT sensor FROM readings r WHERE EXISTS (SELECT 1 FROM readings s WHERE s.id = r.id + 39)",
    "SELECT id, (SELECT max(s.value) FROM readings s WHERE s.id = r.id - 1) FROM readings r",
    "SELECT count(*) FROM readings LATERAL VIEW explode(array(1, 2)) t AS x",
    "SELECT sensor, count(*) FROM readings GROUP BY GROUPING SETS ((sensor), ())",
    "SELECT count(*) OVER (), id FROM readings",
    "SELECT count(*) FROM readings a JOIN readings b USING (id)",
    "SELECT * FROM (SELECT sensor, value FROM readings) PIVOT (sum(value) FOR sensor IN ('s0', 's1'))",
    "SELECT count(*) FROM (SELECT DISTINCT sensor FROM readings)",
    "WITH x AS (SELECT id, sensor FROM readings) SELECT count(*) FROM x a JOIN x b USING (id)",
    "SELECT id FROM readings INTERSECT SELECT id FROM readings WHERE sensor = 's1'",
    "SELECT count(*), count(value) FROM (SELECT * FROM readings) WHERE id > 3",
    "SELECT count(*) FROM (TABLE readings ORDER BY value LIMIT 5)",
    "SELECT count(*) FROM readings a LEFT ANTI JOIN readings b ON a.id = b.id + 1",
    "SELECT count(*) FROM readings a JOIN LATERAL (SELECT a.value * 2 AS v) b ON b.v > 10",
])
def test_queries_of_every_shape_get_the_full_answer(spark, readings, sql):
    rows, _ = _run(spark, readings, sql)
    assert rows == _full(spark, readings, sql)


def test_pulsar_spark_sql_names_topics_as_pulsar_sql_does_and_prunes(
        spark, standalone, etcd, readings):
    import pulsar_spark

    local = readings["table"].topic.rsplit("/", 1)[1]
    df = pulsar_spark.sql(
        spark, f'SELECT count(*) AS n, avg(value) AS mean FROM public.default."{local}"',
        admin_url=standalone.web_url, service_url=standalone.service_url,
        options={"metadata.url": etcd.url, "schema": SCHEMA, "schema.type": "json"})
    assert [tuple(r) for r in df.collect()] == [(40, sum(i / 2 for i in range(40)) / 40)]
    assert spark.table(f"`{readings['table'].view}`").columns == ["value"]
