"""The add pipeline alone: call order kept whatever order the writes finish in, a bounded
queue, waiting adds expiring. A scripted ledger handle stands in for the bookies so a
test decides when each write completes."""

from __future__ import annotations

import asyncio
import gc
import tracemalloc
from collections.abc import Coroutine

import pytest
from pulsar_broker.managed_ledger import add_pipeline, api, errors


class ScriptedHandle:
    """A ledger whose writes complete when the test says so."""

    def __init__(self, ledger_id: int) -> None:
        self.ledger_id = ledger_id
        self.writes: list[asyncio.Future[int]] = []
        self.payloads: list[bytes] = []

    def append_future(self, payload: bytes) -> asyncio.Future[int]:
        written: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.writes.append(written)
        self.payloads.append(payload)
        return written

    def complete(self, index: int) -> None:
        self.writes[index].set_result(index)


class Target:
    """Records what the pipeline reports; hands out `handle` unless told to hold adds."""

    def __init__(self, handle: ScriptedHandle) -> None:
        self.handle: ScriptedHandle | None = handle
        self.added: list[api.Position] = []
        self.wakeups = 0
        self.failed: list[BaseException] = []

    def handle_for(self, size_bytes: int) -> ScriptedHandle | None:
        return self.handle

    def write_failed(self, handle: object, failure: BaseException) -> errors.ManagedLedgerError:
        self.failed.append(failure)
        return errors.ManagedLedgerWriteError(str(failure))

    def entry_added(self, position: api.Position, data: bytes) -> None:
        self.added.append(position)

    def entries_added(self) -> None:
        self.wakeups += 1


class Clock:
    def __init__(self) -> None:
        self.now = 1000

    def __call__(self) -> int:
        return self.now


def make(target: Target, clock: Clock | None = None) -> add_pipeline.AddPipeline:
    def spawn(coroutine: Coroutine[object, object, None]) -> None:
        asyncio.ensure_future(coroutine)

    return add_pipeline.AddPipeline("ml", target, clock or Clock(), spawn)  # type: ignore[arg-type]


async def test_adds_complete_in_call_order_when_writes_finish_out_of_order() -> None:
    handle = ScriptedHandle(7)
    target = Target(handle)
    pipeline = make(target)
    futures = [pipeline.accept(b"x%d" % i) for i in range(3)]
    handle.complete(2)
    handle.complete(1)
    await asyncio.sleep(0)
    assert not any(f.done() for f in futures)
    handle.complete(0)
    await asyncio.sleep(0)
    assert [f.result() for f in futures] == [api.Position(7, i) for i in range(3)]
    assert target.added == [api.Position(7, i) for i in range(3)]
    await asyncio.wait_for(pipeline.wait_idle(), 1)


async def test_a_failed_write_fails_only_its_add_and_later_ones_still_complete() -> None:
    handle = ScriptedHandle(7)
    target = Target(handle)
    pipeline = make(target)
    first, second = pipeline.accept(b"a"), pipeline.accept(b"b")
    handle.writes[0].set_exception(OSError("disk gone"))
    handle.complete(1)
    await asyncio.sleep(0)
    with pytest.raises(errors.ManagedLedgerWriteError):
        first.result()
    assert second.result() == api.Position(7, 1)
    assert len(target.failed) == 1


async def test_adds_wait_while_the_target_holds_them_and_go_out_in_order_after() -> None:
    handle = ScriptedHandle(3)
    target = Target(handle)
    target.handle = None
    pipeline = make(target)
    pipeline.hold(True)
    futures = [pipeline.accept(b"%d" % i) for i in range(2)]
    assert pipeline.waiting == 2 and handle.writes == []
    target.handle = handle
    pipeline.hold(False)
    pipeline.pump()
    assert pipeline.waiting == 0 and len(handle.writes) == 2
    handle.complete(0)
    handle.complete(1)
    await asyncio.sleep(0)
    assert [f.result() for f in futures] == [api.Position(3, 0), api.Position(3, 1)]


async def test_the_pending_limit_refuses_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(add_pipeline, "PENDING_ADDS_MAX", 2)
    target = Target(ScriptedHandle(1))
    target.handle = None
    pipeline = make(target)
    pipeline.accept(b"a")
    pipeline.accept(b"b")
    with pytest.raises(errors.TooManyPendingAddsError) as refused:
        pipeline.accept(b"c")
    assert refused.value.retriable


async def test_waiting_adds_expire_after_the_add_timeout_oldest_first() -> None:
    clock = Clock()
    target = Target(ScriptedHandle(1))
    target.handle = None
    pipeline = make(target, clock)
    old = pipeline.accept(b"old")
    clock.now += 600
    young = pipeline.accept(b"young")
    assert pipeline.until_first_expires_ms(1000) == 400
    clock.now += 400
    pipeline.expire_waiting(1000, RuntimeError("no bookies"))
    with pytest.raises(errors.ManagedLedgerWriteError, match="no bookies"):
        old.result()
    assert not young.done() and pipeline.waiting == 1
    assert pipeline.until_first_expires_ms(0) is None


class RequeueingTarget(Target):
    """As a managed ledger does: a broken ledger's adds go to the next ledger, and no add
    is handed out until the test names that ledger (the rollover)."""

    def write_failed(self, handle: object, failure: BaseException) -> None:  # type: ignore[override]
        self.failed.append(failure)
        self.handle = None
        return None


async def test_adds_of_a_broken_ledger_go_to_the_next_one_in_order_ahead_of_later_adds() -> None:
    broken, following = ScriptedHandle(7), ScriptedHandle(8)
    target = RequeueingTarget(broken)
    pipeline = make(target)
    a, b, c = (pipeline.accept(payload) for payload in (b"a", b"b", b"c"))
    broken.complete(0)
    # The writer fails its pending adds; their callbacks may run in any order.
    broken.writes[2].set_exception(OSError("bookie gone"))
    broken.writes[1].set_exception(OSError("bookie gone"))
    await asyncio.sleep(0)
    assert a.result() == api.Position(7, 0)
    assert not b.done() and not c.done()
    assert pipeline.requeued == 2 and pipeline.waiting == 2
    await asyncio.wait_for(pipeline.inflight_drained(), 1)
    d = pipeline.accept(b"d")
    target.handle = following
    pipeline.pump()
    assert following.payloads == [b"b", b"c", b"d"] and pipeline.requeued == 0
    for index in range(3):
        following.complete(index)
    await asyncio.sleep(0)
    assert [f.result() for f in (b, c, d)] == [api.Position(8, i) for i in range(3)]
    assert target.added == [api.Position(7, 0)] + [api.Position(8, i) for i in range(3)]
    await asyncio.wait_for(pipeline.wait_idle(), 1)


async def test_requeued_adds_still_fail_once_they_waited_the_add_timeout() -> None:
    clock = Clock()
    target = RequeueingTarget(ScriptedHandle(7))
    pipeline = make(target, clock)
    requeued = pipeline.accept(b"a")
    target.handle.writes[0].set_exception(OSError("bookie gone"))  # type: ignore[union-attr]
    await asyncio.sleep(0)
    later = pipeline.accept(b"b")
    assert pipeline.requeued == 1 and pipeline.waiting == 2
    clock.now += 1000
    pipeline.expire_waiting(1000, RuntimeError("bookie gone"))
    # Both waited the timeout; the requeued one, accepted first, fails first.
    with pytest.raises(errors.ManagedLedgerWriteError, match="bookie gone"):
        requeued.result()
    with pytest.raises(errors.ManagedLedgerWriteError):
        later.result()
    assert pipeline.requeued == 0 and pipeline.waiting == 0


async def test_a_fenced_ledger_fails_its_adds_at_once_instead_of_requeueing_them() -> None:
    class FencedTarget(Target):
        def write_failed(self, handle: object, failure: BaseException) -> errors.ManagedLedgerError:
            self.handle = None
            return errors.ManagedLedgerFencedError("fenced by another writer")

    target = FencedTarget(ScriptedHandle(7))
    pipeline = make(target)
    add = pipeline.accept(b"a")
    target.handle.writes[0].set_exception(OSError("fenced"))  # type: ignore[union-attr]
    await asyncio.sleep(0)
    with pytest.raises(errors.ManagedLedgerFencedError):
        add.result()
    assert pipeline.requeued == 0


async def test_wait_idle_and_inflight_drained_wake_when_the_last_add_completes() -> None:
    handle = ScriptedHandle(5)
    pipeline = make(Target(handle))
    await asyncio.wait_for(pipeline.wait_idle(), 1)  # idle from the start
    pipeline.accept(b"a")
    pipeline.accept(b"b")
    idle = asyncio.ensure_future(pipeline.wait_idle())
    drained = asyncio.ensure_future(pipeline.inflight_drained())
    handle.complete(0)
    await asyncio.sleep(0)
    assert not idle.done() and not drained.done()
    handle.complete(1)
    await asyncio.wait_for(asyncio.gather(idle, drained), 1)
    # Busy again after a new add, and idle again once it completes.
    pipeline.accept(b"c")
    idle = asyncio.ensure_future(pipeline.wait_idle())
    await asyncio.sleep(0)
    assert not idle.done()
    handle.complete(2)
    await asyncio.wait_for(idle, 1)


async def test_a_held_pipeline_is_not_idle_until_released() -> None:
    pipeline = make(Target(ScriptedHandle(5)))
    pipeline.hold(True)
    idle = asyncio.ensure_future(pipeline.wait_idle())
    await asyncio.sleep(0)
    assert not idle.done()
    pipeline.hold(False)
    await asyncio.wait_for(idle, 1)


async def test_the_pending_limit_counts_adds_in_flight(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(add_pipeline, "PENDING_ADDS_MAX", 2)
    pipeline = make(Target(ScriptedHandle(1)))
    pipeline.accept(b"a")
    pipeline.accept(b"b")
    with pytest.raises(errors.TooManyPendingAddsError):
        pipeline.accept(b"c")


async def test_a_pipeline_that_wrote_and_went_idle_keeps_no_queue_or_event() -> None:
    # Issue 16: a broker holds a pipeline per topic; an empty deque (an Event holds one)
    # costs ~760 bytes, so an idle pipeline must hold none.
    handle = ScriptedHandle(1)
    target = Target(handle)
    shared_stats = add_pipeline.stats.ManagedLedgerStats()
    pipelines = []
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(200):
            pipeline = add_pipeline.AddPipeline(
                "ml", target, Clock(), asyncio.ensure_future, shared_stats)  # type: ignore[arg-type]
            pipeline.accept(b"x")
            handle.complete(i)
            pipelines.append(pipeline)
        await asyncio.sleep(0)
        await asyncio.wait_for(asyncio.gather(*(p.wait_idle() for p in pipelines)), 1)
        target.added.clear()
        handle.writes.clear()
        handle.payloads.clear()
        gc.collect()
        per_pipeline = (tracemalloc.get_traced_memory()[0] - before) / len(pipelines)
    finally:
        tracemalloc.stop()
    assert per_pipeline < 500, per_pipeline
