"""`pulsar operator`: the command line of the kopf operator.

Wired into the `pulsar` command through `add_arguments(parser) -> runner`.
This module needs nothing beyond the standard library, so `pulsar --help`
works on an install without the `operator` extra; the runner checks for
kopf and then hands over to `pulsar_operator.process`.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import socket
import sys
from collections.abc import Callable

from pulsar_common.cli import extras

#: The version in the default image name when the distribution's metadata is missing (a source tree).
FALLBACK_VERSION = "0.1.0"


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                       help="watch this namespace (repeatable; globs like 'team-*' work)")
    scope.add_argument("--all-namespaces", "-A", action="store_true",
                       help="watch every namespace (the default when no --namespace is given)")
    parser.add_argument("--liveness-port", type=int, default=8080, help="port of GET /healthz (default 8080)")
    parser.add_argument("--liveness-host", default="0.0.0.0", help="address of the /healthz listener")
    parser.add_argument("--no-leader-election", dest="leader_election", action="store_false",
                        help="run without the Lease (only when a single replica is guaranteed)")
    parser.add_argument("--lease-name", default="pulsar-operator", help="name of the coordination Lease")
    parser.add_argument("--lease-namespace", default=None,
                        help="namespace of the Lease (default: $POD_NAMESPACE, else the first --namespace, else default)")
    parser.add_argument("--lease-duration", type=int, default=15,
                        help="seconds a leader's Lease lasts without renewal (renewed every third of it; default 15)")
    parser.add_argument("--resync-interval", type=float, default=30.0,
                        help="seconds between status refreshes and drift correction per resource (default 30)")
    parser.add_argument("--function-image", default=default_function_image(),
                        help="image of function instances when a Function names none "
                        "(default: $PULSAR_IMAGE, else pulsar-py:<this version>)")
    parser.add_argument("--no-function-mesh", dest="function_mesh", action="store_false",
                        help="leave compute.functionmesh.io Functions alone (when Function Mesh itself runs)")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    return run


def run(args: argparse.Namespace) -> int:
    extras.require("operator", "kopf")
    # Imported here, after the check: the process module pulls in kopf.
    from pulsar_operator import process

    return process.run(args, identity=identity(), lease_namespace=lease_namespace(args))


def default_function_image() -> str:
    """$PULSAR_IMAGE (the chart sets it), else this release's own image."""
    if os.environ.get("PULSAR_IMAGE"):
        return os.environ["PULSAR_IMAGE"]
    try:
        version = importlib.metadata.version("pulsar-py")
    except importlib.metadata.PackageNotFoundError:
        version = FALLBACK_VERSION
    return f"pulsar-py:{version}"


def identity() -> str:
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"


def lease_namespace(args: argparse.Namespace) -> str:
    if args.lease_namespace:
        return str(args.lease_namespace)
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    plain = [ns for ns in args.namespace if not any(c in ns for c in "*?[!")]
    return plain[0] if plain else "default"


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="pulsar operator")
    sys.exit(add_arguments(_parser)(_parser.parse_args()))
