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
from pulsar_common import naming
from pulsar_common.metadata import api as md
from pulsar_common.metadata import factory

TOPIC = naming.TopicName.parse("persistent://public/default/orders")
A = BrokerUrls("pulsar://10.0.0.1:6650", "http://10.0.0.1:8080")
B = BrokerUrls("pulsar://10.0.0.2:6650", "http://10.0.0.2:8080")


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

    async def store(self) -> md.MetadataStore:
        store = await factory.create_store(self.url, session_timeout_s=3)
        self.stores.append(store)
        return store

    async def broker(self, urls: BrokerUrls) -> NamespaceService:
        service = NamespaceService(resources.PulsarResources(await self.store()), urls,
                                   urls.http_url.removeprefix("http://"), "local", "test")
        await service.start()
        return service

    async def close(self) -> None:
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
    bundle = await a.check_ownership(TOPIC)
    assert a.ownership.owns(bundle)
    with pytest.raises(errors.BundleOwnedElsewhereError) as refused:
        await b.check_ownership(TOPIC)
    assert refused.value.owner_http_url == A.http_url
    assert await b.lookup(TOPIC) == A
    assert await b.lookup(TOPIC, authoritative=True) == A
    assert await a.lookup(TOPIC) == A
    assert set(await b.live_brokers()) == {"10.0.0.1:8080", "10.0.0.2:8080"}
    stored = await b.store.get(ownership.ownership_path(bundle))
    assert stored is not None and json.loads(stored.value)["nativeUrl"] == A.native_url


async def test_a_released_bundle_can_be_taken_by_another_broker(brokers):
    a, b = await brokers.broker(A), await brokers.broker(B)
    bundle = await a.check_ownership(TOPIC)
    await a.release(bundle)
    assert not a.ownership.owns(bundle)
    assert await b.check_ownership(TOPIC) == bundle
    assert await a.lookup(TOPIC) == B


async def test_a_closed_session_frees_the_brokers_bundles_and_registration(brokers):
    a, b = await brokers.broker(A), await brokers.broker(B)
    await a.check_ownership(TOPIC)
    await a.store.close()
    assert set(await b.live_brokers()) == {"10.0.0.2:8080"}
    await b.check_ownership(TOPIC)
    assert await b.lookup(TOPIC) == B


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
    assert await b.check_ownership(TOPIC) == bundle
    for _ in range(200):
        if "10.0.0.1:8080" in await b.live_brokers():
            break
        await asyncio.sleep(0.1)
    assert set(await b.live_brokers()) == {"10.0.0.1:8080", "10.0.0.2:8080"}
    with pytest.raises(errors.BundleOwnedElsewhereError):
        await a.check_ownership(TOPIC)
