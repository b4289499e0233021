"""The `pulsar operator` process: log in, wait for the Lease, run kopf with our handlers.

With leader election on (the default), a replica first waits for the Lease,
answering /healthz meanwhile, then runs kopf until it loses the lease, and
exits non-zero so Kubernetes restarts it as a standby. `pulsar_operator.cli`
parses the command line and calls `run`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
from typing import Any

import kopf
from aiohttp import web

from pulsar_operator import handlers, kube, leader, services

logger = logging.getLogger("pulsar_operator")


def run(args: argparse.Namespace, *, identity: str, lease_namespace: str) -> int:
    """Run until kopf stops (0) or the Lease is lost (1); `identity` holds the Lease in `lease_namespace`."""
    kopf.configure(verbose=args.verbose)
    try:
        return asyncio.run(main(args, identity, lease_namespace))
    except KeyboardInterrupt:
        return 0


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


async def main(args: argparse.Namespace, identity: str, lease_namespace: str) -> int:
    config = services.OperatorConfig(function_image=args.function_image, resync_interval_s=args.resync_interval)
    runtime = handlers.Runtime(config)
    registry = kopf.OperatorRegistry()
    handlers.register(registry, runtime, function_mesh=args.function_mesh)
    elector = None
    if args.leader_election:
        client = kube.KubeClient(connection(), refresh=login)
        elector = leader.LeaderElector(client, lease_namespace, args.lease_name, identity,
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
