"""Entry point of `pulsar-perf`: `produce`, `consume` and `read` load generators."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import pulsar
from pulsar_common import errors as common_errors

from pulsar_client_tools.client import errors as client_errors
from pulsar_client_tools.perf import consume, produce, read


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pulsar-perf",
        description="Load a Pulsar broker and report rates and latency percentiles.",
    )
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    produce.add_arguments(
        commands.add_parser("produce", help="publish messages; latency from send to broker receipt")
    )
    consume.add_arguments(
        commands.add_parser("consume", help="receive messages; latency from publish to receive")
    )
    read.add_arguments(
        commands.add_parser("read", help="read with readers from a message id; latency from "
                            "publish to receive")
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run = {"produce": produce.run, "consume": consume.run, "read": read.run}[args.command]
    try:
        return run(args)
    except pulsar.PulsarException as exc:
        print(f"pulsar-perf: {args.command} failed: {exc}", file=sys.stderr)
        return 1
    except (common_errors.ConfigError, client_errors.CliError) as exc:
        print(f"pulsar-perf: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
