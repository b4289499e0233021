"""PySpark data source over Pulsar topics, `pulsar sql`, Spark-on-K8s jobs.

`register(spark)` makes `spark.read.format("pulsar")` available and turns on
Python filter pushdown, which publish-time and partition pruning rely on.
`sql(spark, query, ...)` runs a query over topics named as in `pulsar sql`,
reading only the columns it uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def register(spark: Any) -> None:
    from pulsar_spark import source

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(source.PulsarDataSource)


def sql(spark: Any, query: str, *, admin_url: str = "http://localhost:8080",
        service_url: str = "pulsar://localhost:6650",
        namespaces: Sequence[str] = ("public/default",),
        options: Mapping[str, str] | None = None) -> Any:
    """The DataFrame of `query` over the topics of `namespaces`, as `pulsar sql` runs it.

    Topics are named as in `pulsar sql` (public.default."my-topic", `public/default/my-topic`,
    or the short name); `options` go to every table's reads (e.g. metadata.url, schema).
    Only the topics the query names are read, and only for the columns it uses.
    """
    from pulsar_spark import tables

    register(spark)
    base = {"admin.url": admin_url, "service.url": service_url, **(options or {})}
    return tables.sql(spark, query, namespaces, base)
