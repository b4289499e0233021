"""`/admin/v2/brokers/...`, `/status.html`: who the brokers are and whether this one is healthy.

The health check reads the metadata store, then writes one entry to the
heartbeat topic's managed ledger (`pulsar/system/healthcheck-<broker>`,
through the bookie journal) and reads it back by position. Apache's does a
full produce/consume round trip through a client; this one exercises the
same metadata and storage path without a client connection. It answers
"ok", or 500 with the reason.
"""

from __future__ import annotations

import asyncio
import re
import struct
import time

from aiohttp import web
from pulsar_common import naming
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker import errors
from pulsar_broker.service import broker_service
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.web import broker_stats, rest

routes = web.RouteTableDef()

HEARTBEAT_NAMESPACE = naming.SYSTEM_NAMESPACE
#: Longest a health check may take before it is reported as failed.
HEALTH_CHECK_TIMEOUT_S = 30.0


def heartbeat_topic(service: BrokerService) -> naming.TopicName:
    broker = re.sub(r"[^-=.\w]", "_", service.broker_id)
    return naming.TopicName.parse(f"persistent://{HEARTBEAT_NAMESPACE}/healthcheck-{broker}")


def heartbeat_entry(producer_name: str, sequence_id: int, payload: bytes) -> bytes:
    """One stored entry (metadataSize | MessageMetadata | payload), as a producer sends it."""
    metadata = pb.MessageMetadata(producer_name=producer_name, sequence_id=sequence_id,
                                  publish_time=int(time.time() * 1000))
    raw: bytes = metadata.SerializeToString()
    return struct.pack(">I", len(raw)) + raw + payload


async def check_health(service: BrokerService) -> None:
    """Metadata read, then one entry written to and read back from the heartbeat ledger.

    It goes to the managed ledger directly, so the check needs no namespace
    policies (a cluster without `pulsar/system` is still healthy) and the
    heartbeat does not show up as a loaded topic in stats and metrics.
    """
    await service.resources.list_clusters()
    name = heartbeat_topic(service)
    ledger = await service.ledger_factory.open(name.persistence_name)
    producer_name = f"health-check-{service.broker_id}"
    data = heartbeat_entry(producer_name, time.time_ns(), f"{producer_name}-{time.time_ns()}".encode())
    position = await ledger.add_entry(data)
    stored = await ledger.read_entry(position)
    if bytes(stored.data) != data:
        raise errors.BrokerError(f"heartbeat entry read back from {position} differs")


@routes.get("/admin/v2/brokers/health")
async def health(request: web.Request) -> web.Response:
    """?topicVersion=V1|V2 picks Apache's heartbeat topic naming; there is one heartbeat
    topic here, so both check the same one."""
    if request.query.get("topicVersion", "V2") not in ("V1", "V2"):
        raise errors.InvalidRequestError("topicVersion must be V1 or V2")
    try:
        await asyncio.wait_for(check_health(rest.service(request)), HEALTH_CHECK_TIMEOUT_S)
    except TimeoutError as exc:
        raise errors.BrokerError("Health check timed out") from exc
    return web.Response(text="ok")


@routes.get("/admin/v2/brokers/ready")
async def ready(request: web.Request) -> web.Response:
    await rest.service(request).resources.list_clusters()
    return web.Response(text="ok")


@routes.get("/status.html")
async def status(request: web.Request) -> web.Response:
    return web.Response(text="OK")


@routes.get("/admin/v2/brokers")
async def active_brokers(request: web.Request) -> web.Response:
    return rest.ok_json(sorted(await rest.service(request).namespaces.live_brokers()))


@routes.get("/admin/v2/brokers/leaderBroker")
async def leader_broker(request: web.Request) -> web.Response:
    """The broker elected at /loadbalance/leader (it runs the load balancer)."""
    leader = await request.app[broker_stats.LOAD_MANAGER].leader()
    if leader is None:
        raise errors.NotFoundError("No leader broker")
    return rest.ok_json(leader)


@routes.get("/admin/v2/brokers/version")
async def version(request: web.Request) -> web.Response:
    return web.Response(text=broker_service.broker_version())


@routes.get("/admin/v2/brokers/backlog-quota-check")
async def backlog_quota_check(request: web.Request) -> web.Response:
    """Run the periodic backlog quota check now, on every topic this broker serves."""
    await rest.service(request).policies.check_backlog_quotas()
    return rest.no_content()


# Registered after the fixed paths above and after dynamic_config's routes, which it would
# otherwise capture.
@routes.get("/admin/v2/brokers/{cluster}")
async def brokers_of_cluster(request: web.Request) -> web.Response:
    service = rest.service(request)
    cluster = rest.check_name(request.match_info["cluster"], "Cluster")
    if cluster not in await service.resources.list_clusters():
        raise errors.NotFoundError("Cluster does not exist")
    local = cluster == service.config.cluster_name
    return rest.ok_json(sorted(await service.namespaces.live_brokers()) if local else [])


@routes.get("/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces")
async def owned_namespaces(request: web.Request) -> web.Response:
    """Bundles this broker owns, keyed "tenant/ns/0x..._0x..." as Apache answers; asked of
    another broker, the request is sent there."""
    service = rest.service(request)
    broker_id = request.match_info["broker"]
    if broker_id != service.broker_id:
        live = await service.namespaces.live_brokers()
        if broker_id not in live:
            raise errors.NotFoundError(f"Broker {broker_id} is not a live broker")
        raise web.HTTPTemporaryRedirect(live[broker_id].http_url + request.path_qs)
    owned = {str(b): {"broker_assignment": "shared", "is_controlled": False, "is_active": True}
             for b in service.namespaces.ownership.owned_bundles}
    return rest.ok_json(owned)
