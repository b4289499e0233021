"""Arguments of `pulsar proxy`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from pulsar_common import log_config

#: Apache's bin/pulsar reads the proxy's config file from this variable.
CONF_ENV = "PULSAR_PROXY_CONF"


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    parser.add_argument("--config", "-c", default=os.environ.get(CONF_ENV) or None,
                        help="proxy.conf (Apache key names): metadataStoreUrl, or "
                             "brokerServiceURL and brokerWebServiceURL, say where brokers are "
                             f"(default: ${CONF_ENV})")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="override one setting, e.g. --conf servicePort=6651")
    log_config.add_arguments(parser)

    def run(args: Any) -> int:
        import asyncio

        from pulsar_common import config as common_config

        from pulsar_proxy import config, service

        log_config.configure_from(args)
        conf = config.load(args.config, common_config.parse_overrides(args.conf or []))
        try:
            import uvloop
            uvloop.install()
        except ImportError:
            pass
        asyncio.run(service.run(conf))
        return 0

    return run
