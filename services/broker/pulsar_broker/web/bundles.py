"""Namespace bundles over the admin API: unload (optionally to a destination broker), split,
and the namespace-wide operations that must run on whichever broker owns each bundle (clear
backlog, unsubscribe).

A namespace-wide request does the work for the bundles this broker owns (or
that nobody owns) and sends the per-bundle request to the owner of each
other bundle; a per-bundle request for a bundle owned elsewhere is
redirected there, as Apache's brokers do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from pulsar_common import naming

from pulsar_broker import errors
from pulsar_broker.loadbalance import model as lb_model
from pulsar_broker.loadbalance import settings as lb_settings
from pulsar_broker.loadbalance import splitting
from pulsar_broker.namespace import bundles as namespace_bundles
from pulsar_broker.namespace import split as namespace_split
from pulsar_broker.namespace.bundles import NamespaceBundle
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_broker.service.broker_service import BrokerService
from pulsar_broker.topics.persistent_topic import PersistentTopic
from pulsar_broker.web import broker_stats, rest

routes = web.RouteTableDef()

NS = "/admin/v2/namespaces/{tenant}/{namespace}"
BUNDLE = NS + "/{bundle:0x[0-9a-fA-F]{8}_0x[0-9a-fA-F]{8}}"

BundleWork = Callable[[BrokerService, NamespaceBundle], Awaitable[None]]


async def _every_bundle(request: web.Request, method: str, suffix: str, work: BundleWork) -> None:
    service = rest.service(request)
    ns = rest.namespace_name(request)
    await service.check_namespace(ns)
    for bundle in await service.namespaces.bundles(ns):
        path = f"/admin/v2/namespaces/{ns}/{bundle.range}{suffix}"
        owner = await service.namespaces.owner_of(bundle)
        if owner is not None and owner != service.namespaces.me:
            await service.namespaces.forward(method, owner, path)
            continue
        try:
            await work(service, bundle)
        except errors.BundleOwnedElsewhereError as exc:
            # Nobody owned it and loading its topics assigned it to another broker: the
            # rest of this bundle's work is done there (the operations are idempotent).
            await service.namespaces.forward(
                method, BrokerUrls(exc.owner_native_url, exc.owner_http_url), path)


async def _one_bundle(request: web.Request, work: BundleWork) -> None:
    service = rest.service(request)
    ns = rest.namespace_name(request)
    await service.check_namespace(ns)
    bundle = await service.namespaces.find_bundle(ns, request.match_info["bundle"])
    owner = await service.namespaces.owner_of(bundle)
    if owner is not None and owner != service.namespaces.me:
        raise web.HTTPTemporaryRedirect(owner.http_url + request.path_qs)
    await work(service, bundle)


async def _topics(service: BrokerService, bundle: NamespaceBundle) -> list[PersistentTopic]:
    topics = []
    for name in await service.topics_of_bundle(bundle):
        topic = await service.get_topic(name, create=False)
        if topic is not None:
            topics.append(topic)
    return topics


# Unload

async def _unload(service: BrokerService, bundle: NamespaceBundle) -> None:
    if service.namespaces.ownership.owns(bundle):
        await service.unload_bundle(bundle)


@routes.put(NS + "/unload")
async def unload_namespace(request: web.Request) -> web.Response:
    """Every bundle of the namespace is given up by its owner; the next lookup of each
    topic assigns the bundle again (possibly to another broker)."""
    await _every_bundle(request, "PUT", "/unload", _unload)
    return rest.no_content()


@routes.put(BUNDLE + "/unload")
async def unload_bundle(request: web.Request) -> web.Response:
    """With destinationBroker (a broker id, host:webPort), the bundle's next owner is that
    broker: the next lookup of any of its topics lands there."""
    destination = request.query.get("destinationBroker")
    if not destination:
        await _one_bundle(request, _unload)
        return rest.no_content()
    service = rest.service(request)
    if destination not in await service.namespaces.live_brokers():
        raise errors.PreconditionFailedError(f"Destination broker {destination} is not active")

    async def unload_to(service: BrokerService, bundle: NamespaceBundle) -> None:
        if service.namespaces.ownership.owns(bundle):
            await service.namespaces.set_destination(bundle, destination)
            await service.unload_bundle(bundle)

    await _one_bundle(request, unload_to)
    return rest.no_content()


# Delete

@routes.delete(BUNDLE)
async def delete_bundle(request: web.Request) -> web.Response:
    """As Apache: refused (409) while persistent topics fall into the bundle, unless
    force=true; then the bundle is given up by its owner (its topics stay stored)."""
    force = rest.query_flag(request, "force")

    async def work(service: BrokerService, bundle: NamespaceBundle) -> None:
        if not force and await service.topics_of_bundle(bundle):
            raise errors.ConflictError("Cannot delete non empty bundle")
        await _unload(service, bundle)

    await _one_bundle(request, work)
    return rest.no_content()


# Split

#: Bundle "names" Apache's split accepts in place of a range (its Policies.BundleType).
BUNDLE_TYPES = ("LARGEST", "HOT")


async def _bundle_of_type(request: web.Request, service: BrokerService,
                          ns: naming.NamespaceName, bundle_type: str) -> NamespaceBundle:
    """LARGEST: the bundle with the most topics; HOT: the one with the highest throughput
    (bytes in and out) in the brokers' load reports. 404 when no bundle qualifies."""
    candidates = await service.namespaces.bundles(ns)
    scores: dict[NamespaceBundle, float] = {}
    if bundle_type == "LARGEST":
        for bundle in candidates:
            scores[bundle] = len(await service.topics_of_bundle(bundle))
    else:
        reported: dict[str, lb_model.BundleStats] = {}
        for report in await request.app[broker_stats.LOAD_MANAGER].reports():
            reported.update(report.bundles)
        for bundle in candidates:
            stats = reported.get(str(bundle))
            scores[bundle] = stats.throughput if stats is not None else 0.0
    best = max(candidates, key=lambda b: scores[b])
    if scores[best] <= 0:
        raise errors.NotFoundError(f"Bundle range {bundle_type} not found")
    return best


@routes.put(BUNDLE + "/split")
@routes.put(NS + "/{bundle:LARGEST|HOT}/split")
async def split_bundle(request: web.Request) -> web.Response:
    """Split the bundle where splitAlgorithmName says (the broker's
    defaultNamespaceBundleSplitAlgorithm by default; specified_positions_divide cuts at
    the positions of the JSON body, a list of numbers); with unload=true the pieces are
    then unloaded, so lookups may place them on other brokers. In place of a range, the
    bundle may be LARGEST or HOT, as in Apache."""
    service = rest.service(request)
    algorithm = (request.query.get("splitAlgorithmName")
                 or service.config.default_namespace_bundle_split_algorithm)
    if algorithm not in lb_settings.ADMIN_SPLIT_ALGORITHMS:
        raise errors.PreconditionFailedError(
            f"Unsupported namespace bundle split algorithm, supported algorithms are "
            f"{list(lb_settings.ADMIN_SPLIT_ALGORITHMS)}")
    unload = rest.query_flag(request, "unload")
    ns = rest.namespace_name(request)
    await service.check_namespace(ns)
    name = request.match_info["bundle"]
    bundle = (await _bundle_of_type(request, service, ns, name) if name in BUNDLE_TYPES
              else await service.namespaces.find_bundle(ns, name))
    owner = await service.namespaces.owner_of(bundle)
    if owner is None:
        owner = await service.namespaces.ownership.try_acquire(bundle)
    if owner != service.namespaces.me:
        # The chosen range, not LARGEST or HOT, so the owner splits this very bundle.
        query = f"?{request.query_string}" if request.query_string else ""
        raise web.HTTPTemporaryRedirect(
            f"{owner.http_url}/admin/v2/namespaces/{ns}/{bundle.range}/split{query}")
    points = await _split_points(request, service, bundle, algorithm)
    children = await namespace_split.split(service.namespaces, bundle, points)
    if unload:
        for child in children:
            await service.unload_bundle(child)
    return rest.no_content()


async def _split_points(request: web.Request, service: BrokerService, bundle: NamespaceBundle,
                        algorithm: str) -> list[int]:
    if algorithm == lb_settings.SPECIFIED_POSITIONS_DIVIDE:
        positions = await rest.body_json(request, [])
        if not isinstance(positions, list) or not all(
                isinstance(p, int) and not isinstance(p, bool) for p in positions):
            raise errors.InvalidRequestError("splitBoundaries must be a JSON list of numbers")
        points = splitting.specified_positions(bundle.lower, bundle.upper, positions)
    else:
        hashes = [namespace_bundles.topic_hash(t) for t in await service.topics_of_bundle(bundle)]
        point = splitting.split_point(algorithm, bundle.lower, bundle.upper, hashes)
        points = [] if point is None else [point]
    if not points:
        raise errors.PreconditionFailedError(f"Bundle {bundle} cannot be split with {algorithm}")
    return points


# Topic hash positions

@routes.get(BUNDLE + "/topicHashPositions")
async def topic_hash_positions(request: web.Request) -> web.Response:
    """Each topic's position in the hash space: the topics named by ?topics= (short names
    are of this namespace; a partitioned topic stands for its partitions) that fall into
    the bundle, or every topic of the bundle when none is named."""
    service = rest.service(request)
    ns = rest.namespace_name(request)
    await service.check_namespace(ns)
    bundle = await service.namespaces.find_bundle(ns, request.match_info["bundle"])
    wanted = request.query.getall("topics", [])
    if wanted:
        names = []
        for text in wanted:
            topic = (naming.TopicName.parse(text) if "://" in text
                     else naming.TopicName.parse(f"persistent://{ns}/{text}"))
            partitions = await service.resources.get_partitions(topic)
            names.extend([topic.partition(i) for i in range(partitions)] if partitions
                         else [topic])
    else:
        names = await service.topics_of_bundle(bundle)
    positions = {str(name): namespace_bundles.topic_hash(name) for name in names
                 if name.namespace_name == ns and bundle.holds(namespace_bundles.topic_hash(name))}
    return rest.ok_json({"namespace": str(ns), "bundle": bundle.range,
                         "topicHashPositions": positions})


# Clear backlog

def _clear_backlog(only: str | None) -> BundleWork:
    async def work(service: BrokerService, bundle: NamespaceBundle) -> None:
        for topic in await _topics(service, bundle):
            for name, subscription in list(topic.subscriptions.items()):
                if only is None or name == only:
                    await subscription.cursor.clear_backlog()
    return work


@routes.post(NS + "/clearBacklog")
@routes.post(NS + "/clearBacklog/{subscription}")
async def clear_namespace_backlog(request: web.Request) -> web.Response:
    """Acknowledge everything, on every subscription (or the named one) of every topic."""
    only = request.match_info.get("subscription")
    suffix = "/clearBacklog" + (f"/{only}" if only else "")
    await _every_bundle(request, "POST", suffix, _clear_backlog(only))
    return rest.no_content()


@routes.post(BUNDLE + "/clearBacklog")
@routes.post(BUNDLE + "/clearBacklog/{subscription}")
async def clear_bundle_backlog(request: web.Request) -> web.Response:
    await _one_bundle(request, _clear_backlog(request.match_info.get("subscription")))
    return rest.no_content()


# Unsubscribe

def _unsubscribe(name: str) -> BundleWork:
    async def work(service: BrokerService, bundle: NamespaceBundle) -> None:
        for topic in await _topics(service, bundle):
            if name in topic.subscriptions:
                await topic.unsubscribe(name)
    return work


@routes.post(NS + "/unsubscribe/{subscription}")
async def unsubscribe_namespace(request: web.Request) -> web.Response:
    """Delete the named subscription from every topic of the namespace that has it."""
    name = request.match_info["subscription"]
    await _every_bundle(request, "POST", f"/unsubscribe/{name}", _unsubscribe(name))
    return rest.no_content()


@routes.post(BUNDLE + "/unsubscribe/{subscription}")
async def unsubscribe_bundle(request: web.Request) -> web.Response:
    await _one_bundle(request, _unsubscribe(request.match_info["subscription"]))
    return rest.no_content()
