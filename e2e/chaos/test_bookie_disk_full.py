"""Found by the chaos run (`disk-full` fault): a bookie whose journal hit ENOSPC kept its
journal failed for good, yet once the disk had room again it registered itself writable.
Every add sent to it then failed, brokers kept swapping it in and out of their ensembles
(hundreds of ensemble changes a second), and with two such bookies among four, E=3
ensembles could not be formed and publishing stalled for minutes. Now a failed journal
turns the bookie read-only at once, and a journal that failed for lack of space writes
again (in a fresh file) once the disk has room.

BookKeeper turns a bookie whose journal disk is full read-only and back to writable
when space returns, with the journal working again (a journal that failed for good
shuts the bookie down instead). Either way, a bookie that says it is writable takes
adds. Needs root, for the small tmpfs that is filled.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pathlib
import subprocess
import time

import pytest
from pulsar_bookie import types
from pulsar_bookie.net import client as bookie_net
from pulsar_bookie.net import errors as bookie_net_errors
from pulsar_bookie.service import testing as bookie_testing

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")

MASTER_KEY = b"disk-full"


@pytest.fixture
def small_disk(tmp_path: pathlib.Path):
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(disk)], check=True)
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: pathlib.Path) -> pathlib.Path:
    """Fill disk to the last byte: MiB chunks, then 4 KiB ones, unbuffered."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        for chunk in (1 << 20, 4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    out.write(b"\0" * chunk)
    return filler


def read_only(bookie: bookie_testing.BookieProcess) -> bool | None:
    status, body = bookie.http_get("/api/v1/bookie/state/readonly")
    return bool(json.loads(body)["readOnly"]) if status == 200 else None


async def add(client: bookie_net.BookieClient, entry_id: int) -> None:
    await client.add_entry(types.LedgerId(1), types.EntryId(entry_id),
                           types.EntryId(entry_id - 1), b"%d" % entry_id * 10_000, MASTER_KEY)


async def scenario(bookie: bookie_testing.BookieProcess, disk: pathlib.Path) -> None:
    client = bookie_net.BookieClient(bookie.bookie_id)
    try:
        await add(client, 0)
        filler = fill(disk)
        refused = False
        for entry_id in range(1, 50):
            try:
                await add(client, entry_id)
            except Exception:  # noqa: BLE001 - the full disk's answer, whatever its class
                refused = True
                break
        assert refused, "a full journal disk never refused an add"
        # Refused at once, not only once the disk check comes round: writers must not
        # keep choosing a bookie that fails every add.
        assert read_only(bookie) is True
        state = json.loads(bookie.http_get("/api/v1/bookie/state")[1])
        assert "No space left" in state["journalError"] and not state["restartRequired"]
        with pytest.raises(bookie_net_errors.BookieReadOnlyError):
            await add(client, 60)
        filler.unlink()
        deadline = time.monotonic() + 30
        while read_only(bookie) is not False:
            assert time.monotonic() < deadline, "the bookie never became writable again"
            await asyncio.sleep(0.2)
        await add(client, 100)
        state = json.loads(bookie.http_get("/api/v1/bookie/state")[1])
        assert state["journalError"] == "" and state["readOnly"] is False
    finally:
        await client.close()


@pytest.mark.parametrize("sync", [False, True], ids=["journal-unsynced", "journal-synced"])
def test_a_bookie_writable_again_after_a_full_disk_takes_adds(
        tmp_path: pathlib.Path, small_disk: pathlib.Path, sync: bool) -> None:
    bookie = bookie_testing.BookieProcess(tmp_path / "bookie", sync=sync, overrides={
        "journalDirectories": str(small_disk / "journal"),
        "ledgerDirectories": str(small_disk / "ledgers"),
    })
    bookie.start()
    try:
        asyncio.run(scenario(bookie, small_disk))
    finally:
        bookie.stop(timeout_s=10)
