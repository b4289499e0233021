"""`pulsar operator`: run the kopf operator with our handlers.

Wired into the `pulsar` command through `add_arguments(parser) -> runner`.
With leader election on (the default), a replica first waits for the Lease,
answering /healthz meanwhile, then runs kopf until it loses the lease, and
exits non-zero so Kubernetes restarts it as a standby.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

import kopf
from aiohttp import web

from pulsar_operator import handlers, kube, leader, services

logger = logging.getLogger("pulsar_operator")


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
    parser.add_argument("--function-image", default=os.environ.get("PULSAR_IMAGE", services.OperatorConfig.function_image),
                        help="image of function instances when a Function sets none (default $PULSAR_IMAGE)")
    parser.add_argument("--no-function-mesh", dest="function_mesh", action="store_false",
                        help="leave compute.functionmesh.io Functions alone (when Function Mesh itself runs)")
    parser.add_argument("--verbose", "-v", action="store_true", help="debug logging")
    return run


def run(args: argparse.Namespace) -> int:
    kopf.configure(verbose=args.verbose)
    try:
        return asyncio.run(main(args))
    except KeyboardInterrupt:
        return 0


def identity() -> str:
    return os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"


def lease_namespace(args: argparse.Namespace) -> str:
    if args.lease_namespace:
        return str(args.lease_namespace)
    if os.environ.get("POD_NAMESPACE"):
        return os.environ["POD_NAMESPACE"]
    plain = [ns for ns in args.namespace if not any(c in ns for c in "*?[!")]
    return plain[0] if plain else "default"


def login() -> kopf.ConnectionInfo | None:
    settings = kopf.OperatorSettings()
    return kopf.login_with_service_account(settings=settings) or kopf.login_with_kubeconfig(settings=settings)


def connection() -> kopf.ConnectionInfo:
    info = login()
    if info is None:
        raise SystemExit("no Kubernetes credentials: neither a service account nor a kubeconfig was found")
    return info


@contextlib.asynccontextmanager
async def standby_health(host: str, port: int) -> Any:
    """/healthz while waiting for the lease (kopf serves it once running)."""
    async def healthz(_: web.Request) -> web.Response:
        return web.json_response({"standby": True})

    app = web.Application()
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    try:
        yield
    finally:
        await runner.cleanup()


async def main(args: argparse.Namespace) -> int:
    config = services.OperatorConfig(function_image=args.function_image, resync_interval_s=args.resync_interval)
    runtime = handlers.Runtime(config)
    registry = kopf.OperatorRegistry()
    handlers.register(registry, runtime, function_mesh=args.function_mesh)
    elector = None
    if args.leader_election:
        client = kube.KubeClient(connection(), refresh=login)
        elector = leader.LeaderElector(client, lease_namespace(args), args.lease_name, identity(),
                                       duration_s=args.lease_duration, retry_s=max(0.2, args.lease_duration / 5))
        async with standby_health(args.liveness_host, args.liveness_port):
            logger.info("waiting for lease %s as %s", args.lease_name, elector.identity)
            await elector.acquire()
        logger.info("holding lease %s as %s", args.lease_name, elector.identity)
    stop = asyncio.Event()
    operator = asyncio.create_task(kopf.operator(
        registry=registry,
        standalone=True,
        clusterwide=args.all_namespaces or not args.namespace,
        namespaces=args.namespace,
        liveness_endpoint=f"http://{args.liveness_host}:{args.liveness_port}/healthz",
        stop_flag=stop,
    ))
    if elector is None:
        await operator
        return 0
    holding = asyncio.create_task(elector.hold())
    done, _ = await asyncio.wait({operator, holding}, return_when=asyncio.FIRST_COMPLETED)
    if holding in done:
        logger.error("lost lease %s; stopping", args.lease_name)
        stop.set()
        await operator
        return 1
    holding.cancel()
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="pulsar operator")
    sys.exit(add_arguments(_parser)(_parser.parse_args()))
