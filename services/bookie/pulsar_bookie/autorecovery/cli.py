"""`pulsar autorecovery`: the auditor candidate and a replication worker as their own process.

    pulsar autorecovery --config conf/bookkeeper.conf [--conf key=value ...]

Reads the bookies' settings file (metadataServiceUri is required;
lostBookieRecoveryDelay, auditorPeriodicCheckInterval,
auditorPeriodicBookieCheckInterval, openLedgerRereplicationGracePeriod and
rereplicationEntryBatchSize apply). With httpServerEnabled it serves
/heartbeat and the autorecovery admin endpoints on httpServerHost:httpServerPort.
Runs until SIGTERM or SIGINT; exits 2 on a bad configuration, 1 when the
metadata store cannot be reached.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
from collections.abc import Callable, Sequence

from pulsar_common import config as common_config
from pulsar_common import errors as common_errors
from pulsar_common import log_config
from pulsar_common.metadata import factory as metadata_factory

from pulsar_bookie import cli as bookie_cli
from pulsar_bookie import config as bookie_config
from pulsar_bookie.autorecovery import admin, service
from pulsar_bookie.service import http

log = logging.getLogger("pulsar_bookie.autorecovery")


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    runner = bookie_cli.add_arguments(parser)
    parser.description = __doc__.split("\n\n")[0] if __doc__ else None
    del runner
    return run


def run(args: argparse.Namespace) -> int:
    log_config.configure_from(args)
    try:
        conf = bookie_cli.load_config(args)
        if args.print_config:
            print(common_config.render(conf), end="")
            return 0
        conf.validate()
        if not conf.metadataServiceUri:
            raise common_errors.ConfigError("metadataServiceUri is required")
    except (common_errors.ConfigError, OSError) as exc:
        log.error("bad configuration: %s", exc)
        return 2
    return asyncio.run(serve(conf))


async def serve(conf: bookie_config.BookieConfig) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        store = await metadata_factory.create_store(
            conf.metadataServiceUri, session_timeout_s=conf.zkTimeout / 1000.0)
    except common_errors.PulsarError as exc:
        log.error("metadata store unreachable: %s", exc)
        return 1
    host = conf.advertisedAddress or socket.gethostname()
    endpoint: http.HttpEndpoint | None = None
    http_address = ""
    if conf.httpServerEnabled:
        endpoint = http.HttpEndpoint(
            None, admin.AutoRecoveryAdmin(store, conf.lostBookieRecoveryDelay))
        await endpoint.start(conf.httpServerHost, conf.httpServerPort)
        http_address = f"http://{host}:{endpoint.port}"
    me = f"autorecovery-{host}-{os.getpid()}"
    recovery = service.AutoRecoveryService(store, conf, me, http_address)
    recovery.start()
    print(f"READY {me} http={endpoint.port if endpoint else ''}", flush=True)
    await stop.wait()
    log.info("autorecovery %s shutting down", me)
    await recovery.stop()
    if endpoint is not None:
        await endpoint.stop()
    await store.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pulsar autorecovery")
    runner = add_arguments(parser)
    return runner(parser.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
