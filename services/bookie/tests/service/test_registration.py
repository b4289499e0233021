"""Registration in a real etcd: ephemeral keys, cookies, read-only mode, by real processes."""

from __future__ import annotations

import asyncio
import json
import pathlib
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import aetcd
import pytest
from pulsar_bookie import errors, types
from pulsar_bookie.net import client
from pulsar_bookie.net import errors as net_errors
from pulsar_bookie.service import bookie, registration, testing
from pulsar_common import testing as common_testing
from pulsar_common.etcd_server import EtcdServer
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import factory

KEY = b"registration-key"
L = types.LedgerId
E = types.EntryId


@pytest.fixture
async def store(etcd_url: str) -> AsyncIterator[metadata_api.MetadataStore]:
    opened = await factory.create_store(etcd_url)
    yield opened
    await opened.close()


@pytest.fixture
def processes() -> Iterator[list[testing.BookieProcess]]:
    started: list[testing.BookieProcess] = []
    yield started
    for process in started:
        process.kill()


async def eventually(check: Callable[[], Awaitable[bool]], timeout_s: float = 30.0) -> None:
    """Wait for a condition on the metadata store that another process makes true."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.05)


async def test_registration_appears_and_vanishes_when_the_process_is_killed(
    tmp_path: pathlib.Path, etcd_url: str, store: metadata_api.MetadataStore,
    processes: list[testing.BookieProcess],
) -> None:
    process = testing.BookieProcess(
        tmp_path / "b1", metadata_url=etcd_url,
        overrides={"rack": "/zone-a/rack-1", "zkTimeout": "2000"},
    )
    processes.append(process)
    await asyncio.to_thread(process.start)

    [info] = await registration.list_bookies(store)
    state = json.loads(process.http_get("/api/v1/bookie/state")[1])
    assert info == registration.BookieInfo(
        bookie_id=process.bookie_id,
        state=registration.BookieState.AVAILABLE,
        address=process.bookie_id,
        http_address=process.http_url,
        rack="/zone-a/rack-1",
        instance_id=state["instanceId"],
    )
    assert state["registered"] is True
    assert await registration.writable_bookies(store) == [info]
    cookie = await store.get(registration.cookie_path(process.bookie_id))
    assert cookie is not None
    assert json.loads(cookie.value)["instanceId"] == state["instanceId"]

    process.kill()

    async def gone() -> bool:
        return await registration.list_bookies(store) == []

    await eventually(gone)  # the session lease (zkTimeout=2s) expired
    assert await store.exists(registration.cookie_path(process.bookie_id))


def test_registration_json_round_trips_and_tolerates_missing_optional_fields() -> None:
    info = registration.BookieInfo(
        bookie_id=types.BookieId("bk-1:3181"), state=registration.BookieState.READ_ONLY,
        address="10.0.0.1:3181", http_address="http://bk-1:8000", rack="/zone-b",
        instance_id="abc",
    )
    assert registration.BookieInfo.from_json(info.to_json()) == info
    minimal = registration.BookieInfo.from_json(b'{"bookieId": "bk-2:3181", "state": "available"}')
    assert minimal.address == "bk-2:3181" and minimal.writable and minimal.rack == ""


async def test_emptied_data_directory_of_a_known_bookie_refuses_to_start(
    tmp_path: pathlib.Path, etcd_url: str, store: metadata_api.MetadataStore,
    processes: list[testing.BookieProcess],
) -> None:
    process = testing.BookieProcess(tmp_path / "b2", metadata_url=etcd_url)
    processes.append(process)
    await asyncio.to_thread(process.start)
    rpc = client.BookieClient(process.bookie_id)
    await rpc.add_entry(L(1), E(0), E(-1), b"acknowledged", KEY)
    await rpc.close()

    assert await asyncio.to_thread(process.stop) == 0
    assert await registration.list_bookies(store) == []  # a clean stop unregisters at once

    shutil.rmtree(process.data_dir / "journal")
    shutil.rmtree(process.data_dir / "ledgers")
    process.launch()
    assert await asyncio.to_thread(process.wait_exit) == 1
    assert "no cookie" in process.log_tail()
    assert await registration.list_bookies(store) == []


async def test_disk_usage_above_the_threshold_makes_the_bookie_read_only(
    tmp_path: pathlib.Path, etcd_url: str, store: metadata_api.MetadataStore,
    processes: list[testing.BookieProcess],
) -> None:
    process = testing.BookieProcess(
        tmp_path / "b3", metadata_url=etcd_url,
        overrides={"diskUsageThreshold": "0.0001", "diskUsageLwmThreshold": "0.0001"},
    )
    processes.append(process)
    await asyncio.to_thread(process.start)

    [info] = await registration.list_bookies(store)
    assert info.state is registration.BookieState.READ_ONLY
    assert await registration.writable_bookies(store) == []
    assert json.loads(process.http_get("/api/v1/bookie/state")[1])["readOnly"] is True
    rpc = client.BookieClient(process.bookie_id)
    with pytest.raises(net_errors.BookieReadOnlyError):
        await rpc.add_entry(L(1), E(0), E(-1), b"x", KEY)
    with pytest.raises(errors.NoSuchLedgerError):  # reads are still served
        await rpc.read_entry(L(1), E(0))
    await rpc.close()


async def test_read_only_mode_follows_disk_usage_both_ways(
    tmp_path: pathlib.Path, etcd_url: str, store: metadata_api.MetadataStore,
) -> None:
    usage = {"now": 0.50}
    conf = testing.local_config(
        tmp_path / "b4", port=common_testing.free_port(), metadata_url=etcd_url,
        diskUsageThreshold="0.95", diskUsageLwmThreshold="0.90", diskCheckInterval="3600000",
    )
    service = bookie.BookieService(conf, disk_usage=lambda directory: usage["now"])
    await service.start()
    rpc = client.BookieClient(service.bookie_id)
    try:
        async def state() -> registration.BookieState:
            [info] = await registration.list_bookies(store)
            return info.state

        await rpc.add_entry(L(1), E(0), E(-1), b"a", KEY)
        assert await state() is registration.BookieState.AVAILABLE

        usage["now"] = 0.97
        assert await service.monitor.check() is True
        assert await state() is registration.BookieState.READ_ONLY
        with pytest.raises(net_errors.BookieReadOnlyError):
            await rpc.add_entry(L(1), E(1), E(0), b"b", KEY)
        assert (await rpc.read_entry(L(1), E(0))).payload == b"a"

        usage["now"] = 0.92  # below the threshold, above the low water mark: stays read-only
        assert await service.monitor.check() is True
        assert await state() is registration.BookieState.READ_ONLY

        usage["now"] = 0.80
        assert await service.monitor.check() is False
        assert await state() is registration.BookieState.AVAILABLE
        await rpc.add_entry(L(1), E(1), E(0), b"b", KEY)

        await service.force_read_only(True)  # what PUT /api/v1/bookie/state/readonly does
        assert await state() is registration.BookieState.READ_ONLY
        await service.force_read_only(False)
        assert await state() is registration.BookieState.AVAILABLE
    finally:
        await rpc.close()
        await service.stop()
    assert await registration.list_bookies(store) == []


async def test_registration_returns_after_the_metadata_session_is_lost(
    tmp_path: pathlib.Path, etcd_url: str, etcd_server: EtcdServer,
    store: metadata_api.MetadataStore,
) -> None:
    conf = testing.local_config(
        tmp_path / "b5", port=common_testing.free_port(), metadata_url=etcd_url
    )
    async with testing.running_bookie(conf) as service:
        [before] = await registration.list_bookies(store)
        lease_id = getattr(service.store, "lease_id", None)
        assert lease_id is not None
        etcd = aetcd.Client(host=etcd_server.host, port=etcd_server.client_port)
        try:
            await etcd.revoke_lease(lease_id)  # the session ends under the bookie's feet
        finally:
            await etcd.close()

        async def back() -> bool:
            current = getattr(service.store, "lease_id", None)
            return current not in (None, lease_id) and await registration.list_bookies(
                store) == [before]

        await eventually(back)


def test_a_bookie_started_before_its_metadata_store_waits_for_it(tmp_path):
    """As BookKeeper's bookie waits for its ZooKeeper session: a bookie whose etcd does not
    answer yet retries (within zkTimeout) instead of exiting, and registers once it does."""
    etcd = EtcdServer(tmp_path / "etcd", common_testing.free_port(), common_testing.free_port())
    starting = testing.BookieProcess(tmp_path / "bookie", metadata_url=etcd.url, sync=False,
                                     overrides={"zkTimeout": "60000"})
    starting.launch()
    try:
        common_testing.wait_until(
            lambda: "metadata store not answering at start" in starting.log_tail(),
            30, "the bookie's first retry", starting.process)
        etcd.start()
        starting.wait_ready()
    finally:
        starting.stop()
        etcd.stop()
