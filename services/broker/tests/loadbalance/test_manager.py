"""The load manager against a real etcd: reports written into the broker's registration, and
a leader round carrying the planner's decisions out as admin calls."""

from __future__ import annotations

import asyncio
import json
import types
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from pulsar_broker import config
from pulsar_broker.loadbalance import manager, model
from pulsar_broker.namespace import registry
from pulsar_broker.namespace.ownership import BrokerUrls
from pulsar_broker.service.broker_service import BrokerService
from pulsar_common import clock
from pulsar_common.metadata import api as md
from pulsar_common.metadata import factory

ME = "b1:8080"
URLS = BrokerUrls("pulsar://b1:6650", "http://b1:8080")


@pytest.fixture
async def store(etcd_url: str) -> AsyncIterator[md.MetadataStore]:
    opened = await factory.create_store(etcd_url)
    yield opened
    await opened.close()


class Calls:
    def __init__(self) -> None:
        self.made: list[tuple[str, str, str]] = []

    async def forward(self, method: str, broker: BrokerUrls, path: str) -> None:
        self.made.append((method, broker.http_url, path))


def fake_service(store: md.MetadataStore, calls: Calls, **conf: Any) -> BrokerService:
    async def live_brokers() -> dict[str, BrokerUrls]:
        return await registry.live_brokers(store)

    async def bundles(ns: Any) -> list[str]:
        return ["one"] * 4

    namespaces = types.SimpleNamespace(
        ownership=types.SimpleNamespace(owned_bundles=[]), live_brokers=live_brokers,
        forward=calls.forward, bundles=bundles)
    service = types.SimpleNamespace(
        config=config.BrokerConfig(**conf), broker_id=ME, web_service_url=URLS.http_url,
        broker_service_url=URLS.native_url, loaded_topics=[], namespaces=namespaces,
        resources=types.SimpleNamespace(store=store))
    return cast(BrokerService, service)


async def test_figures_are_written_once_and_again_into_a_recreated_registration(
        store: md.MetadataStore) -> None:
    await registry.register(store, ME, URLS, "c", "v")
    # CPU and memory usage move between two quick samples; with weight 0 they do not count.
    load = manager.LoadManager(fake_service(store, Calls(), load_balancer_cpu_resource_weight=0.0,
                                            load_balancer_memory_resource_weight=0.0))
    assert await load.publish()
    assert not await load.publish()  # nothing changed: not rewritten
    await registry.register(store, ME, URLS, "c", "v")  # as after a new metadata session
    assert await load.publish()
    assert [r.broker for r in await load.reports()] == [ME]
    assert (await registry.live_brokers(store))[ME] == URLS
    found = await store.get(f"{registry.BROKERS_ROOT}/{ME}")
    assert found is not None and json.loads(found.value)["cluster"] == "c"


async def busy_broker(store: md.MetadataStore, broker: str, bundles: int, mb: float) -> None:
    urls = BrokerUrls(f"pulsar://{broker}", f"http://{broker}")
    await registry.register(store, broker, urls, "c", "v")
    stats = {f"t/ns/0x{i:08x}_0x{i + 1:08x}": model.BundleStats(
        msg_throughput_in=mb * model.BYTES_PER_MB, topics=1) for i in range(bundles)}
    limit = 100 * model.BYTES_PER_MB / 1024
    report = model.BrokerReport(broker, urls.http_url, urls.native_url, bundles=stats,
                                bandwidth_in=model.ResourceUsage(bundles * mb * 1024, limit),
                                last_update_ms=clock.wall_clock_ms())
    path = f"{registry.BROKERS_ROOT}/{broker}"
    found = await store.get(path)
    assert found is not None
    await store.put(path, json.dumps({**json.loads(found.value), **report.to_json()}).encode())


async def test_a_leader_round_unloads_from_the_busy_broker_to_the_idle_one(
        store: md.MetadataStore) -> None:
    await busy_broker(store, "busy:80", 4, 20.0)
    await busy_broker(store, "idle:80", 0, 0.0)
    calls = Calls()
    load = manager.LoadManager(fake_service(
        store, calls, load_balancer_cpu_resource_weight=0.0,
        load_balancer_memory_resource_weight=0.0))
    decided = await load.run_round()
    assert decided is not None and len(decided.unloads) == 2
    assert calls.made == [
        ("PUT", "http://busy:80", f"/admin/v2/namespaces/{u.bundle}/unload?destinationBroker=idle%3A80")
        for u in decided.unloads]
    assert await load.run_round() is None  # too soon after a change: reports not settled


async def test_when_the_leader_goes_another_broker_leads(etcd_url: str) -> None:
    stores = [await factory.create_store(etcd_url, session_timeout_s=2.0) for _ in range(2)]
    managers = [manager.LoadManager(fake_service(
        s, Calls(), load_balancer_shedding_interval_seconds=0.1,
        load_balancer_enabled=False)) for s in stores]
    try:
        for load in managers:
            await load.start()
        await wait_for(lambda: any(m.election.is_leader for m in managers))
        leader = next(m for m in managers if m.election.is_leader)
        other = next(m for m in managers if m is not leader)
        assert not other.election.is_leader
        await leader.close()
        await stores[managers.index(leader)].close()
        await wait_for(lambda: other.election.is_leader)
        assert await other.leader() == {"serviceUrl": URLS.http_url, "brokerId": ME}
    finally:
        for load in managers:
            await load.close()
        for s in stores:
            await s.close()


async def wait_for(condition: Any, timeout_s: float = 20.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.05)
