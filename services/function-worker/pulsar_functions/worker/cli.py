"""`pulsar functions-worker --config functions_worker.conf`: the functions REST API and runtime.

Settings use the keys of Apache's functions_worker.yml, written `key=value`
(configurationMetadataStoreUrl, workerPort, workerHostname, pulsarServiceUrl,
pulsarWebServiceUrl, pulsarFunctionsCluster, downloadDirectory); --conf
overrides one. On a secured cluster: authenticationEnabled,
authenticationProviders, tokenSecretKey, authorizationEnabled,
superUserRoles, proxyRoles for the REST API, and
brokerClientAuthenticationPlugin / brokerClientAuthenticationParameters,
tlsTrustCertsFilePath for the worker's and its instances' connections to
brokers (docs/security.md). The official client wheel comes with the
`functions` extra.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from pulsar_common import config as common_config
from pulsar_common import errors as common_errors
from pulsar_common import log_config
from pulsar_common.cli import extras

from pulsar_functions.worker import config


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    parser.add_argument("--config", "-c", help="functions_worker.conf (Apache key names)")
    parser.add_argument("--conf", action="append", metavar="KEY=VALUE",
                        help="override one setting, e.g. --conf workerPort=6751")
    log_config.add_arguments(parser)
    return run


def run(args: argparse.Namespace) -> int:
    extras.require("functions", "pulsar")
    import asyncio

    log_config.configure_from(args)
    conf = common_config.load(config.WorkerConfig, args.config,
                              common_config.parse_overrides(args.conf or []))
    if not conf.metadata_store_url:
        raise common_errors.ConfigError("configurationMetadataStoreUrl is required")
    asyncio.run(serve(conf))
    return 0


async def serve(conf: config.WorkerConfig) -> None:
    from pulsar_common import lifecycle

    from pulsar_functions.worker import server

    running = server.WorkerServer(conf)

    async def start() -> str:
        await running.start()
        assert running.worker is not None
        return f"pulsar functions-worker {running.worker.worker_id}: {running.url}"

    await lifecycle.run_until_signalled(start, running.stop)
