"""What only the embedded RocksDB backend does: survive restarts and SIGKILL of its process."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading

from pulsar_common import testing
from pulsar_common.metadata import factory

#: Generous bound for waiting on an event on a loaded machine.
WAIT_S = 20.0

_WRITER = textwrap.dedent("""
    import asyncio, sys
    from pulsar_common.metadata import factory

    async def main():
        store = await factory.create_store(sys.argv[1])
        await store.put("/ledgers/1", b"metadata")
        await store.put("/ledgers/1", b"metadata v1", 0)
        await store.put("/brokers/b1", b"alive", ephemeral=True)
        for _ in range(3):
            await store.next_id("/counters/ledger")
        print("acknowledged", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


#: Writes made all at once, so that they are synced in groups (group commit).
_GROUPED_WRITER = textwrap.dedent("""
    import asyncio, sys
    from pulsar_common.metadata import factory

    async def create_topic(store, index):
        ledger_id = await store.next_id("/ledgers-idgen")
        await store.put(f"/ledgers/{ledger_id}", b"ledger")
        await store.put(f"/managed-ledgers/t{index}", str(ledger_id).encode(), -1)

    async def main():
        store = await factory.create_store(sys.argv[1])
        await asyncio.gather(*(create_topic(store, i) for i in range(200)))
        print("acknowledged", flush=True)
        await asyncio.sleep(3600)

    asyncio.run(main())
""")


def _write_then_sigkill(url: str, writer_code: str = _WRITER) -> None:
    """Run the writer in its own process; SIGKILL it once it reports its writes acknowledged."""
    writer = subprocess.Popen([sys.executable, "-c", writer_code, url],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert writer.stdout is not None and writer.stderr is not None
        line = writer.stdout.readline()
    finally:
        testing.kill_process(writer)
    assert line == b"acknowledged\n", writer.stderr.read().decode()
    writer.stdout.close()
    writer.stderr.close()


async def test_acknowledged_writes_survive_sigkill_and_ephemeral_keys_do_not(tmp_path):
    url = f"rocksdb:{tmp_path / 'metadata'}"
    await asyncio.to_thread(_write_then_sigkill, url)

    store = await factory.create_store(url)
    try:
        ledger = await store.get("/ledgers/1")
        assert ledger.value == b"metadata v1"
        assert ledger.stat.version == 1
        assert await store.get("/brokers/b1") is None
        assert await store.get_children("/brokers") == []
        assert await store.next_id("/counters/ledger") == 3
    finally:
        await store.close()


async def test_writes_acknowledged_together_in_groups_all_survive_sigkill(tmp_path):
    url = f"rocksdb:{tmp_path / 'metadata'}"
    await asyncio.to_thread(_write_then_sigkill, url, _GROUPED_WRITER)

    store = await factory.create_store(url)
    try:
        assert len(await store.get_children("/managed-ledgers")) == 200
        ledger_ids = set()
        for index in range(200):
            record = await store.get(f"/managed-ledgers/t{index}")
            ledger_ids.add(int(record.value))
        assert ledger_ids == set(range(200))
        assert len(await store.get_children("/ledgers")) == 200
        assert await store.next_id("/ledgers-idgen") == 200
    finally:
        await store.close()


async def test_data_and_versions_are_kept_when_the_store_is_reopened(tmp_path):
    url = f"rocksdb:///{tmp_path / 'metadata'}"
    store = await factory.create_store(url)
    await store.put("/a", b"1")
    created = await store.put("/a", b"2")
    await store.put("/session/x", b"", ephemeral=True)
    await store.close()

    reopened = await factory.create_store(url)
    try:
        result = await reopened.get("/a")
        assert result.value == b"2"
        assert result.stat.version == 1
        assert result.stat.creation_ms == created.creation_ms
        assert not await reopened.exists("/session/x")
        assert (await reopened.put("/a", b"3", 1)).version == 2
    finally:
        await reopened.close()


async def test_opening_another_store_keeps_the_live_sessions_ephemeral_keys(tmp_path):
    url = f"rocksdb:{tmp_path / 'metadata'}"
    first = await factory.create_store(url)
    try:
        await first.put("/brokers/b1", b"", ephemeral=True)
        second = await factory.create_store(url)
        try:
            assert await second.exists("/brokers/b1")
        finally:
            await second.close()
        assert await first.exists("/brokers/b1")
    finally:
        await first.close()


async def test_reads_do_not_wait_behind_writes_and_see_only_acknowledged_ones(tmp_path):
    commit_thread_busy = threading.Event()
    release = threading.Event()
    store = await factory.create_store(f"rocksdb:{tmp_path / 'metadata'}")
    try:
        await store.put("/topics/t", b"v0")

        def hold() -> None:
            commit_thread_busy.set()
            release.wait(WAIT_S)

        held = asyncio.create_task(store._shared.run(hold))
        assert await asyncio.to_thread(commit_thread_busy.wait, WAIT_S)
        update = asyncio.create_task(store.put("/topics/t", b"v1"))
        created = asyncio.create_task(store.put("/topics/u", b"new"))
        await asyncio.sleep(0)  # both queued behind the held commit thread

        assert (await asyncio.wait_for(store.get("/topics/t"), WAIT_S)).value == b"v0"
        assert await asyncio.wait_for(store.get_children("/topics"), WAIT_S) == ["t"]
        release.set()
        await asyncio.wait_for(asyncio.gather(held, update, created), WAIT_S)
        assert (await store.get("/topics/t")).value == b"v1"
        assert await store.get_children("/topics") == ["t", "u"]
    finally:
        release.set()
        await store.close()
