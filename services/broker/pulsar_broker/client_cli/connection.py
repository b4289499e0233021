"""Official `pulsar.Client` construction shared by `pulsar-client` and `pulsar-perf`.

The C++ library logs at INFO to stdout by default, which would mix with the
messages these tools print. Its log goes to stderr instead, through the
library's own file logger opened on /dev/stderr (in append mode): a Python
`logging.Logger` would be called back from the library's threads, and the
wheel is known to abort intermittently at interpreter exit when one is set.
"""

from __future__ import annotations

import pulsar

DEFAULT_SERVICE_URL = "pulsar://localhost:6650"
LOG_PATH = "/dev/stderr"

LOG_LEVELS = {
    "debug": pulsar.LoggerLevel.Debug,
    "info": pulsar.LoggerLevel.Info,
    "warn": pulsar.LoggerLevel.Warn,
    "error": pulsar.LoggerLevel.Error,
}


def make_client(
    service_url: str, log_level: str = "warn", io_threads: int = 1, operation_timeout_s: int = 30
) -> pulsar.Client:
    logger = pulsar.FileLogger(LOG_LEVELS[log_level], LOG_PATH)
    return pulsar.Client(
        service_url,
        io_threads=io_threads,
        operation_timeout_seconds=operation_timeout_s,
        logger=logger,
    )
