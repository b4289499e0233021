"""Official `pulsar.Client` construction shared by `pulsar-client` and `pulsar-perf`.

The C++ library logs at INFO to stdout by default, which would mix with the
messages these tools print. Its log goes to stderr instead, through the
library's own file logger opened on /dev/stderr (in append mode): a Python
`logging.Logger` would be called back from the library's threads, and the
wheel is known to abort intermittently at interpreter exit when one is set.
"""

from __future__ import annotations

import argparse

import pulsar

from pulsar_client_tools.client import security

DEFAULT_SERVICE_URL = "pulsar://localhost:6650"
LOG_PATH = "/dev/stderr"

LOG_LEVELS = {
    "debug": pulsar.LoggerLevel.Debug,
    "info": pulsar.LoggerLevel.Info,
    "warn": pulsar.LoggerLevel.Warn,
    "error": pulsar.LoggerLevel.Error,
}


def make_client(
    service_url: str, log_level: str = "warn", io_threads: int = 1, operation_timeout_s: int = 30,
    options: security.ClientOptions | None = None,
) -> pulsar.Client:
    """An official client; options carry the credentials and TLS trust (client.conf, flags)."""
    logger = pulsar.FileLogger(LOG_LEVELS[log_level], LOG_PATH)
    return pulsar.Client(
        service_url,
        io_threads=io_threads,
        operation_timeout_seconds=operation_timeout_s,
        logger=logger,
        **(options or security.ClientOptions()).pulsar_client_arguments(),
    )


def service_url(given: str | None, options: security.ClientOptions) -> str:
    """The flag, else client.conf's brokerServiceUrl, else pulsar://localhost:6650."""
    return given or options.broker_service_url or DEFAULT_SERVICE_URL


def client_from_args(args: argparse.Namespace, io_threads: int = 1) -> pulsar.Client:
    """The client of a pulsar-client or pulsar-perf command: --service-url (else client.conf)
    and the security flags of pulsar_client_tools.client.security (else client.conf)."""
    options = security.resolve(args)
    args.service_url = service_url(args.service_url, options)
    return make_client(args.service_url, args.log_level, io_threads, options=options)
