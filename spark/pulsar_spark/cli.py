"""`pulsar sql "SELECT ..."`: SQL over the topics of a namespace, run on a local Spark.

Every topic of the given namespaces can be named in the query (see
pulsar_spark.tables for the naming scheme). Results print as a table, CSV
or JSON lines. With --k8s-manifest the query is not run: the
SparkApplication that runs it on Kubernetes is printed instead.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
from collections.abc import Callable
from typing import Any

from pulsar_common.cli import extras

from pulsar_spark import errors

OUTPUTS = ("table", "csv", "json")


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    parser.add_argument("query", nargs="?", help="the SQL query; topics are tables "
                        '(public.default."my-topic", `public/default/my-topic` or my_topic)')
    parser.add_argument("--admin-url", default="http://localhost:8080",
                        help="broker admin REST API (default %(default)s)")
    parser.add_argument("--service-url", default="pulsar://localhost:6650",
                        help="broker service URL (default %(default)s)")
    parser.add_argument("--metadata-url", help="metadata store holding ledger metadata "
                        "(etcd:http://host:2379), needed when the broker does not report it")
    parser.add_argument("--standalone-bookie", metavar="HOST:PORT",
                        help="for a `pulsar standalone` with its embedded metadata store: its "
                        "bookie (bookiePort, 3181 by default), which holds every ledger")
    parser.add_argument("--namespace", action="append", dest="namespaces",
                        help="tenant/namespace whose topics are tables (repeatable; "
                        "default public/default; short names are for the first one)")
    parser.add_argument("--schema", action="append", default=[], metavar="TOPIC=SCHEMA",
                        help="schema of a topic: a JSON record definition or @file "
                        '(Pulsar\'s {"type": "JSON"|"AVRO", "schema": ...} form too)')
    parser.add_argument("--schema-type", action="append", default=[], metavar="[TOPIC=]TYPE",
                        help="bytes, string, json or avro, for one topic or all")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="data source option for every table (e.g. publishTime.toleranceMs=0)")
    parser.add_argument("--output", choices=OUTPUTS, default="table",
                        help="result format (default %(default)s)")
    parser.add_argument("--max-rows", type=int, default=1000,
                        help="rows a table output shows at most (default %(default)s)")
    parser.add_argument("--master", default="local[*]", help="Spark master (default %(default)s)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="Spark configuration")
    progress = parser.add_mutually_exclusive_group()
    progress.add_argument("--progress", dest="progress", action="store_true", default=None,
                          help="show Spark's stage progress on stderr (default: when a terminal)")
    progress.add_argument("--no-progress", dest="progress", action="store_false")
    parser.add_argument("--tables", action="store_true", help="list the table names and exit")
    k8s = parser.add_argument_group("Kubernetes (--k8s-manifest prints a SparkApplication)")
    k8s.add_argument("--k8s-manifest", action="store_true",
                     help="print the SparkApplication that runs the query, do not run it")
    k8s.add_argument("--image", help="Spark 4 image with pulsar-py installed")
    k8s.add_argument("--output-path", help="where the job writes the result (e.g. s3a://...)")
    k8s.add_argument("--output-format", default="parquet", choices=("parquet", "csv", "json"))
    k8s.add_argument("--job-name", default="pulsar-sql")
    k8s.add_argument("--k8s-namespace", default="default")
    k8s.add_argument("--service-account", default="spark")
    k8s.add_argument("--executor-instances", type=int, default=2)
    k8s.add_argument("--executor-memory", default="2g")
    k8s.add_argument("--driver-memory", default="1g")
    k8s.add_argument("--main-application-file")
    k8s.add_argument("--spark-version")
    return run


def _pairs(items: list[str], what: str) -> dict[str, str]:
    result = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise errors.OptionError(f"{what} {item!r} is not KEY=VALUE")
        result[key.strip()] = value
    return result


def _schemas(args: argparse.Namespace) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Options for every table, and per-topic options (full topic name -> options)."""
    from pulsar_spark import options

    base = _pairs(args.option, "--option")
    per_topic: dict[str, dict[str, str]] = {}
    for item in args.schema_type:
        if "=" in item:
            topic, _, kind = item.partition("=")
            per_topic.setdefault(options.full_topic_name(topic), {})["schema.type"] = kind
        else:
            base["schema.type"] = item
    for topic, text in _pairs(args.schema, "--schema").items():
        if text.startswith("@"):
            text = pathlib.Path(text[1:]).read_text(encoding="utf-8")
        per_topic.setdefault(options.full_topic_name(topic), {})["schema"] = text
    return base, per_topic


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except errors.PulsarSparkError as exc:
        print(f"pulsar sql: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    namespaces = args.namespaces or ["public/default"]
    if args.k8s_manifest:
        extras.require("spark", "yaml")
        return _print_manifest(args, namespaces)
    extras.require("spark", "pyspark", "pyarrow")
    from pulsar_spark import admin, tables

    client = admin.AdminClient(args.admin_url)
    known = tables.tables_of(client, namespaces)
    if args.tables:
        for table in known:
            short = f"  (also {table.short})" if table.short else ""
            tenant, namespace, local = table.tenant_namespace_local
            print(f'{tenant}.{namespace}."{local}"{short}')
        return 0
    if not args.query:
        raise errors.OptionError("give a query (or --tables)")
    base, per_topic = _schemas(args)
    base.update({"admin.url": args.admin_url, "service.url": args.service_url})
    if args.metadata_url:
        base["metadata.url"] = args.metadata_url
    if args.standalone_bookie:
        base["standalone.bookie"] = args.standalone_bookie
    query, used = tables.rewrite(args.query, known)
    progress = sys.stderr.isatty() if args.progress is None else args.progress
    return execute(query, used, base, per_topic, args, progress)


def execute(query: str, used: list[Any], base: dict[str, str],
            per_topic: dict[str, dict[str, str]], args: argparse.Namespace,
            progress: bool) -> int:
    from pulsar_spark import output, session, tables

    conf = {"spark.sql.ansi.doubleQuotedIdentifiers": "true", **_pairs(args.conf, "--conf")}
    spark = session.local_session(args.master, conf, progress)
    df = tables.query(spark, query, used, base, per_topic)
    columns = df.columns
    if args.output == "table":
        rows = df.limit(args.max_rows + 1).collect()
        output.write_table(columns, rows[: args.max_rows], sys.stdout)
        more = " (more not shown: --max-rows)" if len(rows) > args.max_rows else ""
        print(f"{min(len(rows), args.max_rows)} row(s){more}")
    elif args.output == "csv":
        output.write_csv(columns, df.toLocalIterator(), sys.stdout)
    else:
        output.write_json(columns, df.toLocalIterator(), sys.stdout)
    sys.stdout.flush()
    return 0


def _print_manifest(args: argparse.Namespace, namespaces: list[str]) -> int:
    from pulsar_spark import k8s

    if not args.query or not args.image or not args.output_path:
        raise errors.OptionError("--k8s-manifest needs the query, --image and --output-path")
    extra = {}
    if args.main_application_file:
        extra["main_application_file"] = args.main_application_file
    if args.spark_version:
        extra["spark_version"] = args.spark_version
    job = k8s.JobSpec(
        query=args.query, output_path=args.output_path, image=args.image,
        admin_url=args.admin_url, service_url=args.service_url, metadata_url=args.metadata_url,
        namespaces=tuple(namespaces), output_format=args.output_format, name=args.job_name,
        k8s_namespace=args.k8s_namespace, service_account=args.service_account,
        executor_instances=args.executor_instances, executor_memory=args.executor_memory,
        driver_memory=args.driver_memory,
        extra_conf=tuple(_pairs(args.conf, "--conf").items()), **extra)
    sys.stdout.write(k8s.render_yaml(job))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pulsar sql", description=__doc__)
    runner = add_arguments(parser)
    return runner(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())


