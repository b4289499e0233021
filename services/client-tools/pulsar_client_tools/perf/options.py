"""Options shared by `pulsar-perf produce`, `consume` and `read` (Apache's short and long names)."""

from __future__ import annotations

import argparse

from pulsar_client_tools.client import connection, security


def add_common(parser: argparse.ArgumentParser,
               num_messages_flags: tuple[str, ...] = ("-m", "--num-messages")) -> None:
    parser.add_argument("topics", nargs="+", help="topic name(s)")
    parser.add_argument(
        "-u",
        "--service-url",
        default=None,
        help="service URL (default: client.conf brokerServiceUrl, else "
             f"{connection.DEFAULT_SERVICE_URL})",
    )
    security.add_arguments(parser, ("--trust-cert-file", "--tls-trust-cert-path"))
    parser.add_argument(
        "-t",
        "--num-topics",
        type=int,
        default=1,
        help="topics per given name; with more than one, '-<i>' is appended",
    )
    parser.add_argument(
        "-r",
        "--rate",
        type=float,
        default=0.0,
        help="messages per second in total; 0 means unlimited",
    )
    parser.add_argument(
        *num_messages_flags,
        dest="num_messages",
        type=int,
        default=0,
        help="stop after this many messages in total; 0 means no limit",
    )
    parser.add_argument(
        "-time",
        "--test-duration",
        type=float,
        default=0.0,
        help="stop after this many seconds; 0 means no limit",
    )
    parser.add_argument(
        "-i",
        "--stats-interval-seconds",
        type=float,
        default=5.0,
        help="seconds between rate lines (default 5)",
    )
    parser.add_argument(
        "--log-level",
        default="warn",
        choices=list(connection.LOG_LEVELS),
        help="client library log level, on stderr (default warn)",
    )
    parser.add_argument(
        "-ioThreads", "--num-io-threads", type=int, default=1, help="client I/O threads (default 1)"
    )
    parser.add_argument(
        "--warmup-time",
        type=float,
        default=1.0,
        help="seconds at the start whose latencies are not recorded (default 1); "
        "messages are counted from the start",
    )
    parser.add_argument(
        "--histogram-file",
        default=None,
        help="write the run's latency distribution (percentile table) to this file",
    )
    parser.add_argument(
        "-au",
        "--admin-url",
        default=None,
        help="web service URL of the cluster, for admin calls (produce --partitions)",
    )


def expand_topics(names: list[str], num_topics: int) -> list[str]:
    if num_topics <= 1:
        return list(names)
    return [f"{name}-{i}" for name in names for i in range(num_topics)]
