"""Namespace service: which broker serves a topic, and taking or giving up bundles.

A lookup finds the topic's bundle and its owner. A bundle nobody owns goes to
the broker an unload named as its destination (recorded under
/loadbalance/bundle-destinations for a minute), else to the live broker owning
the fewest bundles among those the cluster's namespace isolation policies
allow (isolation.py): when that is this broker it takes
the bundle, otherwise it asks that broker over HTTP (an authoritative lookup,
which makes the other broker take it; the HTTP client is injected, see
forwarding.py) and answers with the result. Apache's
brokers redirect the client instead; the client ends up at the same owner
either way, with one round trip fewer for it here.

A broker serves a topic only while it owns the topic's bundle; when its
metadata session is lost, its ownership keys are gone and it unloads every
topic it had (clients look the topics up again and find the new owners).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from pulsar_common import clock, naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import errors as md_errors

from pulsar_broker import errors, resources
from pulsar_broker.namespace import bundles, forwarding, isolation, registry
from pulsar_broker.namespace.bundles import NamespaceBundle
from pulsar_broker.namespace.ownership import BrokerUrls, OwnershipCache

log = logging.getLogger(__name__)

#: Where an unload with a destination broker records it until the destination takes the bundle.
DESTINATIONS_ROOT = "/loadbalance/bundle-destinations"
#: A recorded destination older than this is ignored (its broker never took the bundle).
DESTINATION_TTL_MS = 60_000

BundlesLost = Callable[[list[NamespaceBundle]], Awaitable[None]]


def _destination_path(bundle: NamespaceBundle) -> str:
    return f"{DESTINATIONS_ROOT}/{bundle.namespace}/{bundle.range}"


def _tie_break(bundle: NamespaceBundle, broker: BrokerUrls) -> bytes:
    """Equal loads: a per-bundle order of brokers, so bundles spread rather than pile up."""
    return hashlib.sha1(f"{bundle}|{broker.http_url}".encode()).digest()


class NamespaceService:
    def __init__(self, pulsar_resources: resources.PulsarResources, me: BrokerUrls, *,
                 broker_id: str, cluster: str, version: str, http: forwarding.BrokerHttp,
                 now_ms: clock.NowMs = clock.wall_clock_ms) -> None:
        self.resources = pulsar_resources
        self._now_ms = now_ms
        self.me = me
        self.broker_id = broker_id
        self._cluster = cluster
        self._version = version
        self.ownership = OwnershipCache(pulsar_resources.store, me)
        #: Called with the bundles this broker stopped owning without unloading them.
        self.on_bundles_lost: BundlesLost | None = None
        #: Requests to other brokers (forwarded admin requests, authoritative lookups).
        self._http = http
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def store(self) -> md.MetadataStore:
        return self.resources.store

    async def start(self) -> None:
        await registry.register(self.store, self.broker_id, self.me, self._cluster, self._version)
        self.store.register_session_listener(self._session_event)

    async def close(self) -> None:
        await self._http.close()

    def _session_event(self, event: md.SessionEvent) -> None:
        if event is md.SessionEvent.SESSION_LOST:
            lost = self.ownership.forget_all()
            log.warning("metadata session lost: unloading %d bundles", len(lost))
            if lost and self.on_bundles_lost is not None:
                self._spawn(self.on_bundles_lost(lost))
        elif event is md.SessionEvent.SESSION_REESTABLISHED:
            self._spawn(registry.register(self.store, self.broker_id, self.me, self._cluster,
                                          self._version))

    def _spawn(self, work: Awaitable[None]) -> None:
        async def run() -> None:
            try:
                await work
            except Exception:
                log.exception("handling a metadata session change failed")

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # Bundles

    async def bundles(self, ns: naming.NamespaceName) -> list[NamespaceBundle]:
        return bundles.bundles_of(ns, await self._policies(ns))

    async def bundle_of(self, topic: naming.TopicName) -> NamespaceBundle:
        return bundles.bundle_of(topic, await self._policies(topic.namespace_name))

    async def find_bundle(self, ns: naming.NamespaceName, text: str) -> NamespaceBundle:
        return bundles.find_bundle(ns, await self._policies(ns), text)

    async def _policies(self, ns: naming.NamespaceName) -> dict[str, Any]:
        try:
            return await self.resources.get_policies(ns)
        except errors.NotFoundError as exc:
            raise errors.NotFoundError(f"Namespace {ns} does not exist") from exc

    # Ownership

    async def check_ownership(self, topic: naming.TopicName) -> NamespaceBundle:
        """The topic's bundle, owned by this broker; BundleOwnedElsewhereError when another
        broker serves it. A bundle nobody owns is assigned as a lookup would assign it, so
        admin calls spread bundles over the brokers as clients do."""
        bundle = await self.bundle_of(topic)
        if self.ownership.owns(bundle):
            return bundle
        owner = await self.lookup(topic)
        if owner != self.me:
            raise errors.BundleOwnedElsewhereError(
                f"Namespace bundle {bundle} is served by {owner.native_url}", owner.native_url,
                owner.http_url)
        return bundle

    async def lookup(self, topic: naming.TopicName, authoritative: bool = False) -> BrokerUrls:
        """The broker that serves topic, assigning its bundle when nobody owns it.

        authoritative: the asking broker chose this one; take the bundle here.
        """
        bundle = await self.bundle_of(topic)
        owner = await self.ownership.owner(bundle)
        if owner is not None:
            return owner
        if authoritative:
            return await self._take(bundle)
        candidate = await self._choose_broker(bundle)
        if candidate != self.me:
            answer = await self._ask_to_take(candidate, topic)
            if answer is not None:
                # The HTTP answer has no listeners; the owner's key, just written, has them.
                return await self.ownership.owner(bundle) or answer
            log.warning("broker %s did not take bundle %s; taking it here",
                        candidate.http_url, bundle)
        return await self._take(bundle)

    async def _take(self, bundle: NamespaceBundle) -> BrokerUrls:
        owner = await self.ownership.try_acquire(bundle)
        if owner == self.me:
            try:
                await self.store.delete(_destination_path(bundle))
            except md_errors.NotFoundError:
                pass
            except md_errors.MetadataStoreError as exc:
                log.warning("could not clear the recorded destination of %s: %r", bundle, exc)
        return owner

    async def _choose_broker(self, bundle: NamespaceBundle) -> BrokerUrls:
        """The destination an unload named for the bundle, if that broker is live; else the
        live broker owning the fewest bundles."""
        brokers = await registry.live_brokers(self.store)
        destination = await self._recorded_destination(bundle)
        if destination is not None and destination in brokers:
            return brokers[destination]
        if not brokers:
            return self.me
        allowed = isolation.candidates(await self._isolation_policies(), str(bundle.namespace),
                                       sorted(brokers))
        live = [brokers[broker_id] for broker_id in allowed]
        load = await self.ownership.count_by_owner()
        return min(live, key=lambda b: (load.get(b, 0), _tie_break(bundle, b)))

    async def _isolation_policies(self) -> dict[str, Any]:
        found = await self.store.get(isolation.record_path(self._cluster))
        return {} if found is None else dict(json.loads(found.value))

    async def set_destination(self, bundle: NamespaceBundle, broker_id: str) -> None:
        """Make broker_id the bundle's next owner (before this broker unloads it)."""
        value = {"brokerId": broker_id, "timestamp": self._now_ms()}
        await self.store.put(_destination_path(bundle), json.dumps(value).encode())

    async def _recorded_destination(self, bundle: NamespaceBundle) -> str | None:
        found = await self.store.get(_destination_path(bundle))
        if found is None:
            return None
        value = json.loads(found.value)
        if self._now_ms() - int(value.get("timestamp", 0)) > DESTINATION_TTL_MS:
            return None
        return str(value["brokerId"])

    async def call(self, method: str, broker: BrokerUrls, path: str,
                   body: bytes | None = None) -> tuple[int, bytes]:
        """An admin request to another broker: its status and body (redirects followed)."""
        try:
            reply = await self._http.request(method, broker.http_url + path, body=body)
        except forwarding.BrokerUnreachableError as exc:
            raise errors.ServiceNotReadyError(
                f"broker {broker.http_url} did not answer {method} {path}: {exc.cause!r}") \
                from exc.cause
        return reply.status, reply.body

    async def forward(self, method: str, broker: BrokerUrls, path: str) -> None:
        """Ask another broker to do what was asked here for the bundles it owns."""
        status, text = await self.call(method, broker, path)
        if status >= 300:
            raise errors.BrokerError(f"{method} {path} on {broker.http_url} answered "
                                     f"{status}: {text.decode(errors='replace')}")

    async def _ask_to_take(self, broker: BrokerUrls, topic: naming.TopicName) -> BrokerUrls | None:
        """An authoritative HTTP lookup on broker; None when it cannot be reached."""
        local = urllib.parse.quote(topic.local_name, safe="")
        url = (f"{broker.http_url}/lookup/v2/topic/{topic.domain.value}/{topic.tenant}/"
               f"{topic.namespace}/{local}")
        try:
            reply = await self._http.request("GET", url, params={"authoritative": "true"},
                                             follow_redirects=False)
        except forwarding.BrokerUnreachableError as exc:
            log.warning("lookup of %s on %s failed: %r", topic, broker.http_url, exc.cause)
            return None
        if reply.status != 200:
            log.warning("lookup of %s on %s answered %s", topic, url, reply.status)
            return None
        try:
            data = json.loads(reply.body)
        except ValueError as exc:
            log.warning("lookup of %s on %s failed: %r", topic, broker.http_url, exc)
            return None
        return BrokerUrls(str(data["brokerUrl"]), str(data["httpUrl"]))

    async def owner_of(self, bundle: NamespaceBundle) -> BrokerUrls | None:
        return await self.ownership.owner(bundle)

    async def release(self, bundle: NamespaceBundle) -> None:
        await self.ownership.release(bundle)

    async def live_brokers(self) -> dict[str, BrokerUrls]:
        return await registry.live_brokers(self.store)
