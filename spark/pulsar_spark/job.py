"""Entry point of the Spark-on-Kubernetes job: run one query over topics, write the result.

    spark-submit job.py --query "SELECT ..." --output s3a://bucket/path [--format parquet]

Cluster URLs come from flags or from the Spark configuration the
SparkApplication sets (spark.pulsar.admin.url, spark.pulsar.service.url,
spark.pulsar.metadata.url). Topics are named as in `pulsar sql`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pulsar-spark-job", description=__doc__)
    parser.add_argument("--query", required=True)
    parser.add_argument("--output", required=True, help="output path (any Spark file system)")
    parser.add_argument("--format", default="parquet", choices=("parquet", "csv", "json"))
    parser.add_argument("--mode", default="errorifexists",
                        choices=("errorifexists", "overwrite", "append"))
    parser.add_argument("--namespace", action="append", dest="namespaces")
    parser.add_argument("--admin-url")
    parser.add_argument("--service-url")
    parser.add_argument("--metadata-url")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    from pyspark.sql import SparkSession

    import pulsar_spark
    from pulsar_spark import tables

    spark = SparkSession.builder.appName("pulsar-sql-job").getOrCreate()
    pulsar_spark.register(spark)
    conf = spark.conf
    base: dict[str, str] = {
        "admin.url": str(args.admin_url or conf.get("spark.pulsar.admin.url",
                                                    "http://localhost:8080")),
        "service.url": str(args.service_url or conf.get("spark.pulsar.service.url",
                                                        "pulsar://localhost:6650")),
    }
    metadata_url = args.metadata_url or conf.get("spark.pulsar.metadata.url", None)
    if metadata_url:
        base["metadata.url"] = str(metadata_url)
    for item in args.option:
        key, _, value = item.partition("=")
        base[key] = value
    result = tables.sql(spark, args.query, args.namespaces or ["public/default"], base)
    result.write.mode(args.mode).format(args.format).save(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
