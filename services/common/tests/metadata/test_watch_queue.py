"""The in-process watch queue and path helpers both backends build on."""

from __future__ import annotations

import asyncio

import pytest
from pulsar_common.metadata import api, errors, paths, watches

NOTE = api.Notification(api.NotificationType.MODIFIED, "/k")


async def test_a_consumer_too_far_behind_gets_watch_lost_after_the_queued_notifications():
    watch = watches.QueueWatch("/k", prefix=False, pending_max=2)
    for _ in range(3):
        watch.offer(NOTE)
    assert [await anext(watch), await anext(watch)] == [NOTE, NOTE]
    with pytest.raises(errors.WatchLostError):
        await anext(watch)


async def test_closing_a_watch_wakes_a_waiting_consumer():
    closed: list[watches.QueueWatch] = []

    async def on_close(watch: watches.QueueWatch) -> None:
        closed.append(watch)

    watch = watches.QueueWatch("/k", prefix=False, on_close=on_close)
    consumer = asyncio.create_task(anext(watch))
    await asyncio.sleep(0)  # let the consumer start waiting
    await watch.close()
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(consumer, 5)
    assert closed == [watch]
    watch.offer(NOTE)
    assert [n async for n in watch] == []


def test_a_failing_session_listener_does_not_stop_the_others():
    heard: list[api.SessionEvent] = []

    def broken(event: api.SessionEvent) -> None:
        raise RuntimeError("listener bug")

    listeners = watches.SessionListeners()
    listeners.add(broken)
    listeners.add(heard.append)
    listeners.emit(api.SessionEvent.SESSION_LOST)
    assert heard == [api.SessionEvent.SESSION_LOST]


@pytest.mark.parametrize(("watched", "changed", "prefix", "seen"), [
    ("/a", "/a", False, True),
    ("/a", "/a/b", False, False),
    ("/a", "/a/b/c", True, True),
    ("/a", "/ab", True, False),
    ("/", "/x", True, True),
])
def test_watch_scope(watched, changed, prefix, seen):
    assert paths.in_scope(watched, changed, prefix) is seen


def test_chroot_maps_paths_to_keys_and_back():
    root = paths.Chroot("/tests/t1")
    assert root.key("/") == b"/tests/t1"
    assert root.key("/a/b") == b"/tests/t1/a/b"
    assert root.path(b"/tests/t1/a/b") == "/a/b"
    assert root.path(b"/tests/t1") == "/"
    assert root.path(b"/tests/t10/a") is None
    assert paths.Chroot("").key("/a") == b"/a"
    assert paths.parent("/a/b") == "/a"
    assert paths.parent("/a") == "/"
    assert paths.parent("/") is None
