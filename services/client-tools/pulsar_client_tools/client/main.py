"""Entry point of `pulsar-client`: `produce`, `consume` and `read`, with Apache's option names."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import pulsar
from pulsar_common import errors as common_errors

from pulsar_client_tools import pipes
from pulsar_client_tools.client import connection, consume, errors, produce, read, security


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pulsar-client",
        description="Produce messages to and consume messages from a Pulsar topic.",
    )
    parser.add_argument(
        "--url",
        "--service-url",
        dest="service_url",
        default=None,
        help="broker service URL, pulsar://, pulsar+ssl:// or http(s):// (default: client.conf "
             f"brokerServiceUrl, else {connection.DEFAULT_SERVICE_URL})",
    )
    security.add_arguments(parser, ("--tls-trust-cert-path",))
    parser.add_argument(
        "--log-level",
        default="warn",
        choices=["debug", "info", "warn", "error"],
        help="level of the client library's log on stderr (default warn)",
    )
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    produce.add_arguments(commands.add_parser("produce", help="send messages to a topic"))
    consume.add_arguments(commands.add_parser("consume", help="receive messages from a topic"))
    read.add_arguments(commands.add_parser("read", help="read messages of a topic from a "
                                           "message id, without a subscription"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run = {"produce": produce.run, "consume": consume.run, "read": read.run}[args.command]
    try:
        return run(args)
    except (errors.CliError, common_errors.ConfigError) as exc:
        print(f"pulsar-client: error: {exc}", file=sys.stderr)
        return 1
    except pulsar.PulsarException as exc:
        print(f"pulsar-client: {args.command} failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        pipes.reader_gone()
        return 0


if __name__ == "__main__":
    sys.exit(main())
