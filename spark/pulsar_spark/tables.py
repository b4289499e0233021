"""Topics as SQL tables: the naming scheme of `pulsar sql` and the Kubernetes job.

Spark SQL has no catalog for Pulsar, so each topic becomes a temporary view.
A topic persistent://public/default/my-topic can be written in a query as

  public.default."my-topic"   public.default.`my-topic`   public.default.my_topic
  `public/default/my-topic`   my_topic   (short name, topics of the first namespace only)

The first three (Pulsar SQL's style) are rewritten to the view name before
Spark parses the query; only names of existing topics of the given namespaces
are rewritten. Only the topics a query mentions are registered, so a query
costs one plan per topic it names, not one per topic of the namespace.
`query` registers them with only the columns the query uses (`pruning`).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.errors import AnalysisException

from pulsar_spark import admin, catalog, pruning


@dataclasses.dataclass(frozen=True)
class Table:
    topic: str
    view: str
    short: str | None

    @property
    def tenant_namespace_local(self) -> tuple[str, str, str]:
        tenant, namespace, local = self.topic.partition("://")[2].split("/", 2)
        return tenant, namespace, local


def short_name(local: str) -> str:
    return re.sub(r"[^0-9A-Za-z_]", "_", local)


def tables_of(client: admin.AdminClient, namespaces: Sequence[str]) -> list[Table]:
    tables, shorts = [], set()
    for index, namespace in enumerate(namespaces):
        for topic in catalog.namespace_tables(client, namespace):
            local = topic.partition("://")[2].split("/", 2)[2]
            short = short_name(local) if index == 0 and short_name(local) not in shorts else None
            if short:
                shorts.add(short)
            tables.append(Table(topic, topic.partition("://")[2], short))
    return tables


def rewrite(query: str, tables: Sequence[Table]) -> tuple[str, list[Table]]:
    """The query with Pulsar-style names turned into view names, and the tables it uses."""
    used: list[Table] = []
    for table in sorted(tables, key=lambda t: -len(t.topic)):
        tenant, namespace, local = table.tenant_namespace_local
        prefix = rf"(?<![\w.`]){re.escape(tenant)}\.{re.escape(namespace)}\."
        names = [rf'"{re.escape(local)}"', rf"`{re.escape(local)}`"]
        if short_name(local) == local:
            names.append(rf"{re.escape(local)}(?![\w])")
        pattern = re.compile(prefix + "(?:" + "|".join(names) + ")")
        query, count = pattern.subn(f"`{table.view}`", query)
        mentioned = count > 0 or f"`{table.view}`" in query or (
            table.short is not None and re.search(rf"(?<![\w.`]){table.short}(?![\w])", query))
        if mentioned:
            used.append(table)
    return query, used


def register(spark: Any, tables: Sequence[Table], base_options: Mapping[str, str],
             topic_options: Mapping[str, Mapping[str, str]],
             schemas: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A temporary view (and short alias) per table, reading with the given options.

    `schemas` gives some topics a reader schema (a subset of their columns).
    Returns each topic's DataFrame schema.
    """
    registered = {}
    for table in tables:
        options = {**base_options, **topic_options.get(table.topic, {}), "topic": table.topic}
        reader = spark.read.format("pulsar").options(**options)
        if schemas and table.topic in schemas:
            reader = reader.schema(schemas[table.topic])
        df = reader.load()
        registered[table.topic] = df.schema
        df.createOrReplaceTempView(f"`{table.view}`")
        if table.short:
            df.createOrReplaceTempView(table.short)
    return registered


def query(spark: Any, sql: str, tables: Sequence[Table], base_options: Mapping[str, str],
          topic_options: Mapping[str, Mapping[str, str]]) -> Any:
    """The DataFrame of `sql` (names already rewritten), each table read only for the columns
    the query uses, in at least as many input partitions as Spark runs tasks at once (unless
    the options give minPartitions)."""
    if not any(key.lower() == "minpartitions" for key in base_options):
        base_options = {**base_options,
                        "minPartitions": str(spark.sparkContext.defaultParallelism)}
    full = register(spark, tables, base_options, topic_options)
    df = spark.sql(sql)
    kept = pruning.narrowed(pruning.needed_columns(df),
                            {topic: schema.names for topic, schema in full.items()})
    if not kept:
        return df
    narrowed = {topic: type(full[topic])([f for f in full[topic].fields if f.name in names])
                for topic, names in kept.items()}
    register(spark, [t for t in tables if t.topic in kept], base_options, topic_options, narrowed)
    try:
        return spark.sql(sql)
    except AnalysisException:
        # Pruning only keeps what the analyzed plan references; should a query still need a
        # column left out, it runs over the full tables rather than fail.
        register(spark, [t for t in tables if t.topic in kept], base_options, topic_options)
        return spark.sql(sql)


def sql(spark: Any, text: str, namespaces: Sequence[str], base_options: Mapping[str, str],
        topic_options: Mapping[str, Mapping[str, str]] | None = None) -> Any:
    """`query` for a SQL text naming topics of `namespaces` as `pulsar sql` does."""
    known = tables_of(admin.AdminClient(base_options["admin.url"]), namespaces)
    rewritten, used = rewrite(text, known)
    return query(spark, rewritten, used, base_options, topic_options or {})
