"""`pulsar <command>`: one entry point; each command lives in the package that owns it.

Commands are named here as "module:function" strings and imported only when
chosen, so pulsar_common does not depend on the services it starts.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from pulsar_common import errors

#: command -> (help, "module:function that adds its arguments and returns the runner")
COMMANDS: dict[str, tuple[str, str]] = {
    "standalone": (
        "run a broker, a bookie and the metadata store in one process",
        "pulsar_broker.cli:add_standalone_arguments",
    ),
    "broker": ("run a broker of a cluster (etcd metadata, remote bookies)",
               "pulsar_broker.cli:add_broker_arguments"),
    "bookie": ("run a bookie (storage node)", "pulsar_bookie.cli:add_arguments"),
    "autorecovery": ("run the bookies' auditor and a replication worker (autorecovery)",
                     "pulsar_bookie.autorecovery.cli:add_arguments"),
    "proxy": ("run a proxy: one address for clients in front of the brokers",
              "pulsar_proxy.cli:add_arguments"),
    "initialize-cluster-metadata": (
        "create a cluster's records (cluster, public/default) in the metadata store",
        "pulsar_broker.cli:add_initialize_arguments",
    ),
    "initialize-namespace": (
        "create namespaces (and their tenants) in the metadata store, without a broker",
        "pulsar_broker.metadata_tools:add_initialize_namespace_arguments",
    ),
    "delete-cluster-metadata": (
        "delete a stopped cluster's records from the metadata store",
        "pulsar_broker.metadata_tools:add_delete_cluster_metadata_arguments",
    ),
    "compact-topic": ("compact a topic and wait for the result",
                      "pulsar_broker.metadata_tools:add_compact_topic_arguments"),
    "local-cluster": (
        "run etcd, bookies and brokers as local processes (a real cluster on one machine)",
        "pulsar_broker.local_cluster:add_arguments",
    ),
    "sql": ("run Spark SQL over the topics of a namespace", "pulsar_spark.cli:add_arguments"),
    "operator": ("run the Kubernetes operator", "pulsar_operator.cli:add_arguments"),
    "function-instance": ("run one instance of a Python function (function.json)",
                          "pulsar_functions.instance.cli:add_arguments"),
    "functions-worker": ("run a functions worker: the /admin/v3/functions API and instances",
                         "pulsar_functions.worker.cli:add_arguments"),
    "tokens": ("create keys and JWTs for token authentication, show and validate tokens",
               "pulsar_common.auth.tokens_cli:add_arguments"),
    "version": ("print the installed version", "pulsar_common.cli.version:add_arguments"),
}


def build_parser(commands: dict[str, tuple[str, str]] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pulsar",
        description="Apache Pulsar, rebuilt in Python: run its services.",
    )
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for name, (help_text, target) in (commands or COMMANDS).items():
        module_name, _, func_name = target.partition(":")
        command_parser = sub.add_parser(name, help=help_text, description=help_text)
        add_arguments = getattr(importlib.import_module(module_name), func_name)
        command_parser.set_defaults(run=add_arguments(command_parser))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        result = args.run(args)
    except errors.ConfigError as exc:
        print(f"pulsar {args.command}: {exc}", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
