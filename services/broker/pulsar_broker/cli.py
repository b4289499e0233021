"""Arguments of `pulsar standalone` (and later `pulsar broker`)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any

from pulsar_common import log_limits


def _logging(level: str) -> None:
    logging.basicConfig(level=getattr(logging, level.upper()),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log_limits.install()


def add_standalone_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    parser.add_argument("--data-dir", default="./data", help="where metadata and ledgers live")
    parser.add_argument("--config", "-c", help="broker.conf-style file (Apache key names)")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="override one setting, e.g. --conf brokerServicePort=6651")
    parser.add_argument("--metadata-url",
                        help="etcd:http://host:2379 to use etcd instead of the embedded store")
    parser.add_argument("--no-functions-worker", "-nfw", action="store_true",
                        help="do not run the functions worker (it runs when the official "
                             "client wheel is installed: the [functions] extra)")
    parser.add_argument("--log-level", default="info")

    def run(args: Any) -> int:
        _logging(args.log_level)
        from pulsar_broker import standalone
        return standalone.main(args)

    return run


def add_broker_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    parser.add_argument("--config", "-c", help="broker.conf (Apache key names); "
                        "metadataStoreUrl must name etcd")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="override one setting, e.g. --conf managedLedgerDefaultAckQuorum=2")
    parser.add_argument("--log-level", default="info")

    def run(args: Any) -> int:
        _logging(args.log_level)
        from pulsar_broker import cluster_broker
        return cluster_broker.main(args)

    return run


def add_initialize_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    parser.add_argument("--cluster", required=True)
    parser.add_argument("--metadata-store", required=True, help="etcd:http://host:2379")
    parser.add_argument("--web-service-url", required=True)
    parser.add_argument("--broker-service-url", required=True)

    def run(args: Any) -> int:
        import asyncio

        from pulsar_broker import cluster_broker
        asyncio.run(cluster_broker.initialize_cluster_metadata(
            args.metadata_store, args.cluster, args.web_service_url, args.broker_service_url))
        print(f"cluster {args.cluster} initialized")
        return 0

    return run
