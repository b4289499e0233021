"""Arguments of `pulsar proxy`."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    parser.add_argument("--config", "-c",
                        help="proxy.conf (Apache key names): metadataStoreUrl, or "
                             "brokerServiceURL and brokerWebServiceURL, say where brokers are")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="override one setting, e.g. --conf servicePort=6651")
    parser.add_argument("--log-level", default="info",
                        choices=["debug", "info", "warning", "error"])

    def run(args: Any) -> int:
        import asyncio

        from pulsar_common import config as common_config

        from pulsar_proxy import config, service

        logging.basicConfig(level=getattr(logging, args.log_level.upper()),
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        conf = config.load(args.config, common_config.parse_overrides(args.conf or []))
        try:
            import uvloop
            uvloop.install()
        except ImportError:
            pass
        asyncio.run(service.run(conf))
        return 0

    return run
