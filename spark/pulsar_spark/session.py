"""Starting a local SparkSession for `pulsar sql` and the benchmarks, set up for this data source."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any


def local_session(master: str = "local[*]", conf: Mapping[str, str] | None = None,
                  progress: bool = False, app_name: str = "pulsar-sql") -> Any:
    # Spark's Python workers start PYSPARK_PYTHON (default: python3 on PATH, which lacks
    # this project's packages): use this interpreter.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import pulsar_spark

    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "true" if progress else "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", "4"))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN" if progress else "ERROR")
    pulsar_spark.register(spark)
    return spark
