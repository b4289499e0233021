"""The MetadataStore contract, run against the RocksDB backend and against a real etcd."""

from __future__ import annotations

import asyncio

import pytest
from pulsar_common.metadata import api, errors

CREATED = api.NotificationType.CREATED
MODIFIED = api.NotificationType.MODIFIED
DELETED = api.NotificationType.DELETED


async def test_versions_start_at_zero_and_grow_by_one_per_put(store):
    first = await store.put("/a/b", b"one")
    second = await store.put("/a/b", b"two")
    result = await store.get("/a/b")
    assert (first.version, second.version) == (0, 1)
    assert result.value == b"two"
    assert result.stat.version == 1
    assert result.stat.path == "/a/b"
    assert result.stat.creation_ms == first.creation_ms
    assert result.stat.modification_ms >= result.stat.creation_ms > 0
    assert not result.stat.ephemeral
    assert await store.exists("/a/b")
    assert await store.get("/a/missing") is None
    assert not await store.exists("/a/missing")


async def test_create_if_absent_fails_when_the_key_exists(store):
    await store.put("/k", b"v", api.VERSION_ABSENT)
    with pytest.raises(errors.AlreadyExistsError):
        await store.put("/k", b"w", api.VERSION_ABSENT)
    assert (await store.get("/k")).value == b"v"


async def test_compare_and_set_needs_the_current_version(store):
    await store.put("/k", b"v0")
    updated = await store.put("/k", b"v1", 0)
    assert updated.version == 1
    with pytest.raises(errors.BadVersionError) as caught:
        await store.put("/k", b"stale", 0)
    assert not isinstance(caught.value, errors.AlreadyExistsError)
    with pytest.raises(errors.NotFoundError):
        await store.put("/absent", b"x", 0)
    assert (await store.get("/k")).value == b"v1"


async def test_concurrent_compare_and_set_lets_exactly_one_writer_win(open_store):
    one, two = await open_store(), await open_store()
    await one.put("/k", b"start")
    results = await asyncio.gather(
        *(store.put("/k", str(i).encode(), 0) for i, store in enumerate([one, two] * 5)),
        return_exceptions=True)
    winners = [r for r in results if isinstance(r, api.Stat)]
    assert len(winners) == 1
    assert all(isinstance(r, errors.BadVersionError) for r in results if r not in winners)


async def test_delete_checks_the_expected_version(store):
    await store.put("/k", b"v")
    await store.put("/k", b"v")
    with pytest.raises(errors.BadVersionError):
        await store.delete("/k", 0)
    await store.delete("/k", 1)
    assert await store.get("/k") is None
    with pytest.raises(errors.NotFoundError):
        await store.delete("/k")
    recreated = await store.put("/k", b"again")
    assert recreated.version == 0
    await store.delete("/k")
    assert not await store.exists("/k")


async def test_get_children_lists_direct_children_sorted(store):
    for path in ["/ns/b", "/ns/a/x/y", "/ns/a", "/ns/c/deep", "/ns-sibling/z", "/ns"]:
        await store.put(path, b"")
    assert await store.get_children("/ns") == ["a", "b", "c"]
    assert await store.get_children("/ns/a") == ["x"]
    assert await store.get_children("/ns/b") == []
    assert await store.get_children("/nothing") == []
    assert await store.get_children("/") == ["ns", "ns-sibling"]


async def test_delete_recursive_removes_the_subtree_and_nothing_else(store):
    for path in ["/t", "/t/a", "/t/a/b", "/t/c", "/t-other", "/u"]:
        await store.put(path, b"")
    await store.delete_recursive("/t")
    for gone in ["/t", "/t/a", "/t/a/b", "/t/c"]:
        assert not await store.exists(gone)
    assert await store.exists("/t-other")
    assert await store.exists("/u")
    await store.delete_recursive("/absent")


async def test_key_watch_reports_create_modify_delete(store, next_notification):
    watch = store.watch("/w")
    await store.put("/w/child", b"")  # below the key: not reported by a key watch
    await store.put("/w", b"1")
    await store.put("/w", b"2")
    await store.delete("/w")
    seen = [await next_notification(watch) for _ in range(3)]
    assert seen == [api.Notification(CREATED, "/w"), api.Notification(MODIFIED, "/w"),
                    api.Notification(DELETED, "/w")]
    await watch.close()
    assert [n async for n in watch] == []


async def test_prefix_watch_reports_changes_below_the_path_from_any_session(
        open_store, next_notification):
    watcher, writer = await open_store(), await open_store()
    watch = watcher.watch("/p", prefix=True)
    await writer.put("/p-not-below", b"")
    await writer.put("/p", b"")
    await writer.put("/p/a/b", b"")
    await writer.put("/p/a/b", b"2")
    await writer.delete_recursive("/p/a")
    seen = [await next_notification(watch) for _ in range(4)]
    assert seen == [api.Notification(CREATED, "/p"), api.Notification(CREATED, "/p/a/b"),
                    api.Notification(MODIFIED, "/p/a/b"), api.Notification(DELETED, "/p/a/b")]
    await watch.close()


async def test_ephemeral_keys_vanish_when_their_store_closes(
        open_store, next_notification):
    owner, observer = await open_store(), await open_store()
    stat = await owner.put("/brokers/b1", b"here", ephemeral=True)
    await owner.put("/brokers/durable", b"stays")
    assert stat.ephemeral
    assert (await observer.get("/brokers/b1")).stat.ephemeral
    watch = observer.watch("/brokers/b1")
    await owner.close()
    assert await next_notification(watch) == api.Notification(DELETED, "/brokers/b1")
    assert await observer.get("/brokers/b1") is None
    assert (await observer.get("/brokers/durable")).value == b"stays"


async def test_second_candidate_leads_after_the_leader_releases(open_store):
    one, two = await open_store(), await open_store()
    first, second = one.leader_election("/leader"), two.leader_election("/leader")
    assert await first.acquire(b"one", timeout_s=5)
    assert first.is_leader
    assert not await second.acquire(b"two", timeout_s=0.2)
    waiting = asyncio.create_task(second.acquire(b"two"))
    assert await second.leader_value() == b"one"
    await first.release()
    assert not first.is_leader
    assert await asyncio.wait_for(waiting, 20)
    assert second.is_leader
    assert await first.leader_value() == b"two"


async def test_second_candidate_leads_after_the_leader_session_ends(open_store, wait_for):
    one, two = await open_store(), await open_store()
    first, second = one.leader_election("/leader"), two.leader_election("/leader")
    assert await first.acquire(b"one", timeout_s=5)
    waiting = asyncio.create_task(second.acquire(b"two"))
    await one.close()
    assert await asyncio.wait_for(waiting, 20)
    assert await second.leader_value() == b"two"
    await wait_for(lambda: not first.is_leader)


async def test_a_create_answered_after_the_acquire_timeout_still_makes_a_leader(open_store):
    # The store makes the key, then answers late (a busy etcd): giving up mid-create would
    # leave our own ephemeral key behind, unknown to us, and nobody could ever lead.
    one = await open_store()
    real_put = one.put

    async def late_put(*args, **kwargs):
        stat = await real_put(*args, **kwargs)
        await asyncio.sleep(0.3)
        return stat

    one.put = late_put
    election = one.leader_election("/leader")
    assert await election.acquire(b"one", timeout_s=0.05)
    assert election.is_leader
    assert await election.leader_value() == b"one"


async def test_next_id_is_unique_and_increasing_across_sessions(open_store):
    one, two = await open_store(), await open_store()

    async def take(store: api.MetadataStore, count: int) -> list[int]:
        return [await store.next_id("/counters/ledger") for _ in range(count)]

    batches = await asyncio.gather(*(take(store, 10) for store in [one, two] * 4))
    ids = [i for batch in batches for i in batch]
    assert sorted(ids) == list(range(80))
    assert all(batch == sorted(batch) for batch in batches)
    assert await one.next_id("/counters/ledger") == 80
    assert await two.next_id("/counters/other") == 0


async def test_chroots_do_not_see_each_other(open_store):
    left, right = await open_store(chroot="/left"), await open_store(chroot="/right")
    await left.put("/k", b"left")
    assert await right.get("/k") is None
    await right.put("/k", b"right")
    assert (await left.get("/k")).value == b"left"
    assert await left.get_children("/") == ["k"]


async def test_bad_paths_are_rejected(store):
    for bad in ["relative", "/trailing/", "/double//slash", ""]:
        with pytest.raises(errors.InvalidPathError):
            await store.put(bad, b"")


async def test_a_closed_store_refuses_calls(open_store):
    store = await open_store()
    await store.close()
    with pytest.raises(errors.StoreClosedError):
        await store.get("/k")
    with pytest.raises(errors.StoreClosedError):
        await store.put("/k", b"")
    await store.close()
