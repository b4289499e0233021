"""A journal write that fails turns the bookie read-only at once, registration included.

Real OS errors, no root needed: the journal's open file is replaced (dup2) by /dev/full
(every write fails with ENOSPC) or by a pipe whose reader went away (EPIPE, an error
that is not a lack of space). A bookie whose journal is out of space writes again, in a fresh file,
once its journal disk has room; one that failed otherwise stays read-only until restarted.
"""

from __future__ import annotations

import asyncio
import os
import pathlib
from collections.abc import AsyncIterator, Callable

import pytest
from pulsar_bookie import errors, types
from pulsar_bookie.net import client
from pulsar_bookie.net import errors as net_errors
from pulsar_bookie.service import bookie, registration, testing
from pulsar_common import testing as common_testing
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import factory

KEY = b"journal-failure-key"
L = types.LedgerId
E = types.EntryId


@pytest.fixture
async def store(etcd_url: str) -> AsyncIterator[metadata_api.MetadataStore]:
    opened = await factory.create_store(etcd_url)
    yield opened
    await opened.close()


def redirect_journal(service: bookie.BookieService, target_fd: int) -> None:
    """Fault injection: the journal's open file now writes to target_fd's file instead."""
    [only] = service.engine._journals
    os.dup2(target_fd, only._fd)
    os.close(target_fd)


async def registered_state(store: metadata_api.MetadataStore) -> registration.BookieState:
    [info] = await registration.list_bookies(store)
    return info.state


def service_on(data_dir: pathlib.Path, etcd_url: str,
               usage: Callable[[str], float]) -> bookie.BookieService:
    conf = testing.local_config(
        data_dir, port=common_testing.free_port(), metadata_url=etcd_url,
        diskCheckInterval="3600000", httpServerEnabled="false",
    )
    return bookie.BookieService(conf, disk_usage=usage)


async def test_a_journal_out_of_space_makes_the_bookie_read_only_until_there_is_room(
    tmp_path: pathlib.Path, etcd_url: str, store: metadata_api.MetadataStore,
) -> None:
    data_dir = tmp_path / "b"
    usage = {"now": 0.99}  # the journal's disk; the ledger disk is nearly empty
    service = service_on(data_dir, etcd_url, lambda directory: (
        usage["now"] if directory.endswith("journal") else 0.10))
    await service.start()
    redirect_journal(service, os.open("/dev/full", os.O_WRONLY))
    rpc = client.BookieClient(service.bookie_id)
    try:
        assert await registered_state(store) is registration.BookieState.AVAILABLE
        with pytest.raises(errors.BookieError, match="No space left"):
            await rpc.add_entry(L(1), E(0), E(-1), b"a", KEY)
        # Read-only from the failed batch on, without waiting for a disk check.
        with pytest.raises(net_errors.BookieReadOnlyError):
            await rpc.add_entry(L(1), E(0), E(-1), b"a", KEY)
        await asyncio.wait_for(_until_registered(store, registration.BookieState.READ_ONLY), 10)
        state = service.state()
        assert "No space left" in state["journalError"] and state["restartRequired"] is False

        await service._retry_journal()  # what each disk check does: the disk is still full
        assert service.read_only

        usage["now"] = 0.10
        await service._retry_journal()
        assert await registered_state(store) is registration.BookieState.AVAILABLE
        await rpc.add_entry(L(1), E(0), E(-1), b"a", KEY)
        await rpc.add_entry(L(1), E(1), E(0), b"b", KEY)
        assert (await rpc.read_entry(L(1), E(1))).payload == b"b"
        assert service.state()["journalError"] == ""
    finally:
        await rpc.close()
        await service.stop()

    # The adds acknowledged after the recovery come back from the journal after a restart.
    restarted = service_on(data_dir, etcd_url, lambda directory: 0.10)
    await restarted.start()
    try:
        assert (await restarted.engine.read_entry(L(1), E(1))).payload == b"b"
        assert (await restarted.engine.read_entry(L(1), E(0))).payload == b"a"
    finally:
        await restarted.stop()


async def test_a_journal_failed_otherwise_keeps_the_bookie_read_only_until_restarted(
    tmp_path: pathlib.Path, etcd_url: str, store: metadata_api.MetadataStore,
) -> None:
    data_dir = tmp_path / "b"
    service = service_on(data_dir, etcd_url, lambda directory: 0.10)
    await service.start()
    read_end, write_end = os.pipe()
    os.close(read_end)  # the journal's writes now fail with EPIPE
    redirect_journal(service, write_end)
    rpc = client.BookieClient(service.bookie_id)
    try:
        with pytest.raises(errors.BookieError):
            await rpc.add_entry(L(1), E(0), E(-1), b"a", KEY)
        await asyncio.wait_for(_until_registered(store, registration.BookieState.READ_ONLY), 10)
        assert service.state()["restartRequired"] is True

        await service._retry_journal()  # the disk has room, but this is no lack of space
        await service.monitor.check()
        await service.force_read_only(False)  # an operator cannot override it either
        assert service.read_only
        assert await registered_state(store) is registration.BookieState.READ_ONLY
        with pytest.raises(net_errors.BookieReadOnlyError):
            await rpc.add_entry(L(1), E(0), E(-1), b"a", KEY)
    finally:
        await rpc.close()
        await service.stop()


async def _until_registered(store: metadata_api.MetadataStore,
                            wanted: registration.BookieState) -> None:
    while await registered_state(store) is not wanted:
        await asyncio.sleep(0.02)
