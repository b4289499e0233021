"""`pulsar bookie`: run one bookie until SIGTERM or SIGINT.

    pulsar bookie --config conf/bookkeeper.conf [--conf key=value ...]

Keys are BookKeeper's (bookiePort, journalDirectories, ledgerDirectories,
journalSyncData, metadataServiceUri, httpServerPort, ...). Without
metadataServiceUri the bookie runs unregistered: clients must be given its
host:port. On SIGTERM/SIGINT it stops accepting, finishes in-flight requests,
unregisters, checkpoints its storage and exits 0. It exits 1 when it cannot
start (for example a cookie mismatch: its data directories were emptied or
belong to another bookie).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence

from pulsar_common import config as common_config
from pulsar_common import errors as common_errors
from pulsar_common import log_config

from pulsar_bookie import config as bookie_config
from pulsar_bookie import errors
from pulsar_bookie.service import bookie

log = logging.getLogger("pulsar_bookie")

#: Apache's bin/pulsar reads the bookie's config file from this variable.
CONF_ENV = "PULSAR_BOOKKEEPER_CONF"


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    """Declare `pulsar bookie`'s options; returns the runner the CLI calls."""
    parser.description = __doc__.split("\n\n")[0] if __doc__ else None
    parser.add_argument("--config", "-c", default=os.environ.get(CONF_ENV) or None,
                        help=f"bookkeeper.conf-style file (key=value; default: ${CONF_ENV})")
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE",
        help="override one setting (repeatable)",
    )
    parser.add_argument(
        "--print-config", action="store_true", help="print the effective settings and exit"
    )
    log_config.add_arguments(parser)
    return run


def load_config(args: argparse.Namespace) -> bookie_config.BookieConfig:
    overrides = common_config.parse_overrides(args.conf)
    return common_config.load(bookie_config.BookieConfig, args.config, overrides)


def run(args: argparse.Namespace) -> int:
    log_config.configure_from(args)
    try:
        conf = load_config(args)
        if args.print_config:
            sys.stdout.write(common_config.render(conf))
            return 0
        bookie.validate(conf)
    except (common_errors.ConfigError, OSError) as exc:
        log.error("bad configuration: %s", exc)
        return 2
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a declared dependency
        return asyncio.run(serve(conf))
    return uvloop.run(serve(conf))


async def serve(conf: bookie_config.BookieConfig) -> int:
    """Run a bookie until a signal (or a fatal condition); the process exit code."""
    service = bookie.BookieService(conf)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        await service.start()
    except (errors.BookieError, common_errors.PulsarError, OSError) as exc:
        log.error("bookie could not start: %s", exc)
        return 1
    print(f"READY {service.bookie_id} port={service.server.port} "
          f"http={service.http_port}", flush=True)
    terminated = asyncio.ensure_future(service.terminated.wait())
    stopped = asyncio.ensure_future(stop.wait())
    await asyncio.wait([terminated, stopped], return_when=asyncio.FIRST_COMPLETED)
    for waiter in (terminated, stopped):
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
    log.info("bookie %s shutting down", service.bookie_id)
    await service.stop()
    return 1 if service.terminated.is_set() else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pulsar bookie")
    runner = add_arguments(parser)
    return runner(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
