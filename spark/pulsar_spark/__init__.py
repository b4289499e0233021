"""PySpark data source over Pulsar topics, `pulsar sql`, Spark-on-K8s jobs.

`register(spark)` makes `spark.read.format("pulsar")` available and turns on
Python filter pushdown, which publish-time and partition pruning rely on.
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    from pulsar_spark import source

    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(source.PulsarDataSource)
