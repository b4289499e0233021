"""Bundle ownership between two brokers' namespace services, on a real etcd."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable

import aetcd
import pytest
from pulsar_broker import errors, resources
from pulsar_broker.namespace import bundles, ownership
from pulsar_broker.namespace.bundles import NamespaceBundle
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_broker.namespace.service import NamespaceService
from pulsar_broker.web import broker_http
from pulsar_common import naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import factory
from pulsar_common.testing import free_port

TOPIC = naming.TopicName.parse("persistent://public/default/orders")
# Nothing listens on these ports: a broker asked to take a bundle over HTTP is refused at
# once, so these tests give bundles out by authoritative lookups only.
_PORTS = [free_port() for _ in range(4)]
A = BrokerUrls(f"pulsar://127.0.0.1:{_PORTS[0]}", f"http://127.0.0.1:{_PORTS[1]}")
B = BrokerUrls(f"pulsar://127.0.0.1:{_PORTS[2]}", f"http://127.0.0.1:{_PORTS[3]}")
A_ID, B_ID = A.http_url.removeprefix("http://"), B.http_url.removeprefix("http://")


async def eventually(condition: Callable[[], bool], timeout_s: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


class Brokers:
    """Namespace services of brokers sharing one etcd chroot, each with its own session."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stores: list[md.MetadataStore] = []
        self.services: list[NamespaceService] = []

    async def store(self) -> md.MetadataStore:
        store = await factory.create_store(self.url, session_timeout_s=3)
        self.stores.append(store)
        return store

    async def broker(self, urls: BrokerUrls) -> NamespaceService:
        service = NamespaceService(resources.PulsarResources(await self.store()), urls,
                                   broker_id=urls.http_url.removeprefix("http://"),
                                   cluster="local", version="test",
                                   http=broker_http.BrokerHttpClient({}))
        await service.start()
        self.services.append(service)
        return service

    async def close(self) -> None:
        for service in self.services:
            await service.close()
        for store in self.stores:
            await store.close()


@pytest.fixture
async def brokers(etcd) -> AsyncIterator[Brokers]:
    group = Brokers(f"etcd:{etcd.endpoint}/ownership-{uuid.uuid4().hex[:8]}")
    setup = await group.store()
    await setup.put("/admin/policies/public/default", json.dumps(resources.default_policies()).encode())
    yield group
    await group.close()


async def test_one_broker_owns_a_bundle_and_the_other_is_told_which(brokers):
    a, b = await brokers.broker(A), await brokers.broker(B)
    assert await a.lookup(TOPIC, authoritative=True) == A
    bundle = await a.check_ownership(TOPIC)
    assert a.ownership.owns(bundle)
    with pytest.raises(errors.BundleOwnedElsewhereError) as refused:
        await b.check_ownership(TOPIC)
    assert refused.value.owner_http_url == A.http_url
    assert await b.lookup(TOPIC) == A
    assert await b.lookup(TOPIC, authoritative=True) == A
    assert await a.lookup(TOPIC) == A
    assert set(await b.live_brokers()) == {A_ID, B_ID}
    stored = await b.store.get(ownership.ownership_path(bundle))
    assert stored is not None and json.loads(stored.value)["nativeUrl"] == A.native_url


async def test_a_lookup_on_one_broker_answers_the_owners_listener(brokers):
    from pulsar_broker.namespace import listeners

    b_listeners = listeners.parse(f"internal:{B.native_url},external:pulsar://b.example:16650")
    b_urls = BrokerUrls(B.native_url, B.http_url, b_listeners)
    a, b = await brokers.broker(A), await brokers.broker(b_urls)
    assert await b.lookup(TOPIC, authoritative=True) == B
    owner = await a.lookup(TOPIC)
    assert owner.native_url_for("external") == "pulsar://b.example:16650"
    assert owner.native_url_for(None) == B.native_url
    with pytest.raises(listeners.ListenerNotFoundError):
        owner.native_url_for("unknown")
    # The registrations carry them too (for bundles handed out by the other broker).
    assert (await a.live_brokers())[B_ID].listeners == b_listeners


async def test_a_released_bundle_can_be_taken_by_another_broker(brokers):
    a, b = await brokers.broker(A), await brokers.broker(B)
    assert await a.lookup(TOPIC, authoritative=True) == A
    bundle = await a.check_ownership(TOPIC)
    await a.release(bundle)
    assert not a.ownership.owns(bundle)
    assert await b.lookup(TOPIC, authoritative=True) == B
    assert await b.check_ownership(TOPIC) == bundle
    assert await a.lookup(TOPIC) == B


async def test_a_closed_session_frees_the_brokers_bundles_and_registration(brokers):
    a, b = await brokers.broker(A), await brokers.broker(B)
    assert await a.lookup(TOPIC, authoritative=True) == A
    await a.store.close()
    assert set(await b.live_brokers()) == {B_ID}
    assert await b.lookup(TOPIC) == B, "the only live broker takes the bundle"
    await b.check_ownership(TOPIC)


async def test_a_key_left_by_the_brokers_previous_life_is_replaced(brokers):
    previous_life = await brokers.store()
    bundle = bundles.bundle_of(TOPIC, resources.default_policies())
    await previous_life.put(ownership.ownership_path(bundle), json.dumps(A.to_json()).encode(),
                            md.VERSION_ABSENT, ephemeral=True)
    a = await brokers.broker(A)
    assert await a.ownership.owner(bundle) is None, "our own stale key is no owner"
    assert await a.lookup(TOPIC, authoritative=True) == A
    assert a.ownership.owns(bundle)
    await previous_life.close()
    b = await brokers.broker(B)
    assert await b.lookup(TOPIC) == A, "the new key belongs to the new session"


async def test_a_lost_session_unloads_every_bundle_then_the_broker_registers_again(brokers, etcd):
    a, b = await brokers.broker(A), await brokers.broker(B)
    assert await a.lookup(TOPIC, authoritative=True) == A
    bundle = await a.check_ownership(TOPIC)
    lost: list[list[NamespaceBundle]] = []

    async def unload(gone: list[NamespaceBundle]) -> None:
        lost.append(gone)

    a.on_bundles_lost = unload
    client = aetcd.Client(etcd.host, etcd.client_port)
    try:
        await client.revoke_lease(a.store.lease_id)  # type: ignore[attr-defined]
    finally:
        await client.close()

    await eventually(lambda: lost == [[bundle]])
    assert not a.ownership.owns(bundle)
    assert await b.lookup(TOPIC, authoritative=True) == B
    for _ in range(200):
        if A_ID in await b.live_brokers():
            break
        await asyncio.sleep(0.1)
    assert set(await b.live_brokers()) == {A_ID, B_ID}
    with pytest.raises(errors.BundleOwnedElsewhereError):
        await a.check_ownership(TOPIC)


async def test_an_unowned_bundle_goes_to_the_least_loaded_broker(brokers):
    """B owns nothing and A owns one bundle: A, asked about a new bundle, offers it to B;
    B cannot be reached here, so A takes it itself rather than failing the lookup."""
    a, b = await brokers.broker(A), await brokers.broker(B)
    other = naming.TopicName.parse("persistent://public/default/" + next(
        f"t{i}" for i in range(1000)
        if bundles.bundle_of(naming.TopicName.parse(f"persistent://public/default/t{i}"),
                             resources.default_policies())
        != bundles.bundle_of(TOPIC, resources.default_policies())))
    assert await a.lookup(TOPIC, authoritative=True) == A
    assert await a._choose_broker(await a.bundle_of(other)) == B
    assert await a.lookup(other) == A
    assert await b.lookup(other) == A


async def test_concurrent_acquisitions_of_one_bundle_keep_the_brokers_key(brokers):
    """Clients look up every partition of a topic at once; the lookups that lose the race to
    create the key must not take the winner's key for a stale one and delete it."""
    a = await brokers.broker(A)
    bundle = bundles.bundle_of(TOPIC, resources.default_policies())
    owners = await asyncio.gather(*(a.ownership.try_acquire(bundle) for _ in range(20)))
    assert owners == [A] * 20
    assert a.ownership.owns(bundle)
    stored = await a.store.get(ownership.ownership_path(bundle))
    assert stored is not None, "the broker believes it owns a bundle whose key is gone"
    assert json.loads(stored.value)["nativeUrl"] == A.native_url
