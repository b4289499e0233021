"""Arguments of `pulsar standalone` (and later `pulsar broker`)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from pulsar_common import log_config

#: Apache's bin/pulsar reads the config file of each service from these variables.
STANDALONE_CONF_ENV = "PULSAR_STANDALONE_CONF"
BROKER_CONF_ENV = "PULSAR_BROKER_CONF"


def add_standalone_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    parser.add_argument("--data-dir", default="./data", help="where metadata and ledgers live")
    parser.add_argument("--config", "-c", default=os.environ.get(STANDALONE_CONF_ENV) or None,
                        help="standalone.conf-style file (Apache key names; "
                             f"default: ${STANDALONE_CONF_ENV})")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="override one setting, e.g. --conf brokerServicePort=6651")
    parser.add_argument("--metadata-url",
                        help="etcd:http://host:2379 to use etcd instead of the embedded store")
    parser.add_argument("--no-functions-worker", "-nfw", action="store_true",
                        help="do not run the functions worker (it runs when the official "
                             "client wheel is installed: the [functions] extra)")
    parser.add_argument("--wipe-data", action="store_true",
                        help="delete the metadata, ledgers and functions under --data-dir "
                             "before starting")
    parser.add_argument("--advertised-address", "-a", metavar="HOST",
                        help="host name clients are told to connect to (advertisedAddress)")
    parser.add_argument("--bookkeeper-port", type=int, metavar="PORT",
                        help="port of the embedded bookie (bookiePort, default 3181)")
    parser.add_argument("--no-stream-storage", "-nss", action="store_true",
                        help="accepted for Apache's scripts; there is no stream storage "
                             "(function state lives in the metadata store)")
    log_config.add_arguments(parser)

    def run(args: Any) -> int:
        log_config.configure_from(args)
        from pulsar_broker import standalone
        return standalone.main(args)

    return run


def add_broker_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    parser.add_argument("--config", "-c", default=os.environ.get(BROKER_CONF_ENV) or None,
                        help="broker.conf (Apache key names); metadataStoreUrl must name etcd "
                             f"(default: ${BROKER_CONF_ENV})")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="override one setting, e.g. --conf managedLedgerDefaultAckQuorum=2")
    log_config.add_arguments(parser)

    def run(args: Any) -> int:
        log_config.configure_from(args)
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
