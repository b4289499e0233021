"""Group commit of the embedded store: operations waiting together share one sync, and
nobody is answered (nor notified) before the sync that covers what it saw."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest
from pulsar_common.metadata import errors, group_commit

WAIT_S = 20.0


class GatedSync:
    """A sync that counts its calls, can be held until released, and can be made to fail."""

    def __init__(self) -> None:
        self.calls = 0
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()
        self.error: Exception | None = None

    def __call__(self) -> None:
        self.calls += 1
        self.entered.set()
        if not self.gate.wait(WAIT_S):
            raise TimeoutError("the test never released the sync")
        if self.error is not None:
            raise self.error


@pytest.fixture
def sync() -> GatedSync:
    return GatedSync()


@pytest.fixture
def commits(sync: GatedSync) -> Iterator[group_commit.CommitThread]:
    thread = group_commit.CommitThread(sync, "test-commit")
    yield thread
    sync.gate.set()
    thread.stop()


def _writer(commits: group_commit.CommitThread, value: int) -> Callable[[], int]:
    def write() -> int:
        commits.written()
        return value
    return write


async def _hold_first_sync(commits: group_commit.CommitThread, sync: GatedSync) -> asyncio.Task[int]:
    """A first write whose sync is held, so that what follows waits together."""
    sync.gate.clear()
    first = asyncio.create_task(commits.run(_writer(commits, -1)))
    assert await asyncio.to_thread(sync.entered.wait, WAIT_S)
    return first


async def test_writes_that_arrive_during_a_sync_share_the_next_one(commits, sync):
    first = await _hold_first_sync(commits, sync)
    rest = [asyncio.create_task(commits.run(_writer(commits, i))) for i in range(50)]
    await asyncio.sleep(0)  # let them all be queued behind the held sync
    sync.gate.set()
    assert await asyncio.wait_for(asyncio.gather(first, *rest), WAIT_S) == [-1, *range(50)]
    assert sync.calls == 2


async def test_no_write_nor_a_read_after_it_is_answered_before_its_sync(commits, sync):
    first = await _hold_first_sync(commits, sync)
    await asyncio.sleep(0.05)  # time enough to answer, were it allowed to
    assert not first.done()
    sync.entered.clear()
    # A write and then a read in the next group: the read may have seen the write.
    write = asyncio.create_task(commits.run(_writer(commits, 1)))
    read = asyncio.create_task(commits.run(lambda: "seen"))
    sync.gate.set()
    assert await asyncio.wait_for(first, WAIT_S) == -1
    assert await asyncio.wait_for(asyncio.gather(write, read), WAIT_S) == [1, "seen"]
    assert sync.calls == 2


async def test_a_group_that_wrote_nothing_is_answered_without_a_sync(commits, sync):
    assert await commits.run(lambda: "read") == "read"
    assert sync.calls == 0


async def test_notifications_are_delivered_after_the_sync_and_before_the_answer(commits, sync):
    order: list[str] = []

    def write_and_notify() -> None:
        commits.written()
        commits.after_sync(lambda: order.append(f"notified after {sync.calls} sync"))

    await commits.run(write_and_notify)
    order.append("answered")
    assert order == ["notified after 1 sync", "answered"]


async def test_a_failed_sync_fails_its_group_and_every_later_operation(commits, sync):
    notified: list[str] = []

    def write_and_notify() -> None:
        commits.written()
        commits.after_sync(lambda: notified.append("changed"))

    sync.error = OSError(5, "Input/output error")
    with pytest.raises(errors.MetadataStoreError, match="syncing the metadata WAL failed"):
        await commits.run(write_and_notify)
    with pytest.raises(errors.MetadataStoreError, match="syncing the metadata WAL failed"):
        await commits.run(lambda: "read")
    assert notified == []


async def test_an_operation_error_reaches_only_its_caller_as_a_metadata_store_error(commits):
    def broken() -> None:
        raise RuntimeError("rocksdb says no")

    results = await asyncio.gather(commits.run(broken), commits.run(lambda: "fine"),
                                   return_exceptions=True)
    assert isinstance(results[0], errors.MetadataStoreError)
    assert isinstance(results[0].__cause__, RuntimeError)
    assert results[1] == "fine"


async def test_a_failing_notification_does_not_stop_the_commit_thread(commits):
    def write_with_broken_notification() -> str:
        commits.written()
        commits.after_sync(lambda: 1 / 0)
        return "written"

    assert await asyncio.wait_for(commits.run(write_with_broken_notification), WAIT_S) == "written"
    assert await asyncio.wait_for(commits.run(lambda: "still running"), WAIT_S) == "still running"


async def test_calls_beyond_the_queue_limit_fail_at_once_and_retriably(sync: GatedSync) -> None:
    commits = group_commit.CommitThread(sync, "test-commit-bounded", queued_operations_max=2)
    try:
        first = await _hold_first_sync(commits, sync)
        waiting = [asyncio.create_task(commits.run(_writer(commits, i))) for i in range(2)]
        await asyncio.sleep(0)
        with pytest.raises(errors.StoreUnavailableError) as refused:
            await commits.run(_writer(commits, 99))
        assert refused.value.retriable
        sync.gate.set()
        assert await asyncio.wait_for(first, WAIT_S) == -1
        assert await asyncio.wait_for(asyncio.gather(*waiting), WAIT_S) == [0, 1]
    finally:
        sync.gate.set()
        commits.stop()
