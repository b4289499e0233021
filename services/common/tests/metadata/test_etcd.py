"""What only the etcd backend does: leases that end under it, etcd going away, endpoints."""

from __future__ import annotations

import asyncio
import uuid

import aetcd
import pytest
from pulsar_common import testing
from pulsar_common.etcd_server import EtcdServer
from pulsar_common.metadata import api, errors, factory
from pulsar_common.metadata.etcd import EtcdMetadataStore

LOST = api.SessionEvent.SESSION_LOST
REESTABLISHED = api.SessionEvent.SESSION_REESTABLISHED


async def _revoke(server: EtcdServer, lease_id: int) -> None:
    """Revoke a lease from another client, the way an etcd admin or expiry would end it."""
    client = aetcd.Client(server.host, server.client_port)
    try:
        await client.revoke_lease(lease_id)
    finally:
        await client.close()


async def test_revoked_lease_ends_the_session_and_its_ephemeral_keys(
        etcd_server, etcd_url, wait_for):
    owner = await factory.create_store(etcd_url, session_timeout_s=5)
    observer = await factory.create_store(etcd_url, session_timeout_s=5)
    try:
        assert isinstance(owner, EtcdMetadataStore)
        events: list[api.SessionEvent] = []
        owner.register_session_listener(events.append)
        await owner.put("/bookies/b1", b"", ephemeral=True)
        leadership = owner.leader_election("/leader")
        assert await leadership.acquire(b"owner", timeout_s=5)
        rival = observer.leader_election("/leader")
        rival_wins = asyncio.create_task(rival.acquire(b"observer"))

        await _revoke(etcd_server, owner.lease_id)

        await wait_for(lambda: LOST in events)
        assert not leadership.is_leader
        assert await observer.get("/bookies/b1") is None
        assert await asyncio.wait_for(rival_wins, 20)
        assert await leadership.leader_value() == b"observer"
        await wait_for(lambda: REESTABLISHED in events)
        assert events.index(LOST) < events.index(REESTABLISHED)
        stat = await owner.put("/bookies/b1", b"again", ephemeral=True)
        assert stat.ephemeral and stat.version == 0
    finally:
        await owner.close()
        await observer.close()


async def test_etcd_down_past_the_ttl_loses_the_session_then_recovers(tmp_path, wait_for):
    server = EtcdServer(tmp_path / "etcd")
    server.start()
    store = None
    try:
        store = await factory.create_store(server.url, session_timeout_s=2)
        events: list[api.SessionEvent] = []
        store.register_session_listener(events.append)
        await store.put("/brokers/b1", b"", ephemeral=True)
        await store.put("/durable", b"kept")
        watch = store.watch("/durable")

        server.kill()
        await wait_for(lambda: api.SessionEvent.CONNECTION_LOST in events)
        await wait_for(lambda: LOST in events)
        with pytest.raises(errors.SessionLostError):
            await store.put("/brokers/b2", b"", ephemeral=True)
        with pytest.raises(errors.StoreUnavailableError):
            await store.get("/durable")

        server.start()
        await wait_for(lambda: REESTABLISHED in events)
        assert api.SessionEvent.RECONNECTED in events
        assert await store.get("/brokers/b1") is None
        assert (await store.get("/durable")).value == b"kept"
        await store.put("/durable", b"changed")
        notification = await asyncio.wait_for(anext(aiter(watch)), 20)
        assert notification == api.Notification(api.NotificationType.MODIFIED, "/durable")
    finally:
        if store is not None:
            await store.close()
        server.stop()


async def test_unreachable_etcd_is_reported_as_unavailable():
    port = testing.free_port()
    with pytest.raises(errors.StoreUnavailableError) as caught:
        await factory.create_store(f"etcd:http://127.0.0.1:{port}")
    assert caught.value.retriable


async def test_a_dead_first_endpoint_fails_over_to_a_live_one(etcd_server):
    dead = testing.free_port()
    url = (f"etcd:http://127.0.0.1:{dead},{etcd_server.endpoint}"
           f"/tests/{uuid.uuid4().hex}")
    store = await factory.create_store(url)
    try:
        await store.put("/k", b"v")
        assert (await store.get("/k")).value == b"v"
    finally:
        await store.close()


async def test_values_written_by_other_tools_read_as_is(etcd_server, etcd_url):
    root = f"/tests/{uuid.uuid4().hex}"
    client = aetcd.Client(etcd_server.host, etcd_server.client_port)
    store = await factory.create_store(etcd_server.url, chroot=root)
    try:
        await client.put(f"{root}/plain".encode(), b'{"raw": true}')
        result = await store.get("/plain")
        assert result.value == b'{"raw": true}'
        assert result.stat.version == 0
        assert result.stat.creation_ms == 0
    finally:
        await store.close()
        await client.close()
