"""Rolling a managed ledger over to a new ledger, while its adds wait.

When the current ledger is full (entries, size or age: `ledger_list.is_full`)
or a write to it failed, new adds wait in the pipeline while a new ledger is
created, the adds in flight finish, and the ledger list is updated by CAS;
then the waiting adds continue on the new ledger in order (those that were
in flight on a ledger whose write failed first). When no ledger can be
created for lack of writable bookies, creation is retried with a doubling
pause; when new ledgers keep breaking before any add succeeds on them, each
next one waits a doubling pause too, so the adds are not spun from ledger to
ledger. Waiting adds fail only once they waited
managedLedgerAddEntryTimeoutSeconds. The time from the start of a rollover
until the new ledger takes adds is counted as a ledger switch (stats.py).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from pulsar_bookie import errors as bookie_errors
from pulsar_bookie.client import api as client_api
from pulsar_common import backoff

from pulsar_broker.managed_ledger import add_pipeline, config, errors, ledger_list, stats

log = logging.getLogger(__name__)

#: Waits between attempts to create a ledger while none can be (no writable bookies), and
#: before each next ledger while new ledgers break before taking any add: short enough
#: that a bookie's return is noticed at once, long enough not to spin adds from ledger
#: to ledger.
LEDGER_RETRY = backoff.BackoffPolicy(first_s=0.1, max_s=5.0)


class RolloverOwner(Protocol):
    """What a rollover needs from the managed ledger it rolls over."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> config.ManagedLedgerConfig: ...

    def now_ms(self) -> int: ...

    @property
    def stats(self) -> stats.ManagedLedgerStats: ...

    @property
    def entries_added_counter(self) -> int:
        """Adds that became durable so far (to tell whether the last new ledger took any)."""

    @property
    def last_write_failure(self) -> BaseException | None:
        """Why a ledger write last failed."""

    def takes_adds(self) -> bool:
        """Whether the managed ledger is open for writing (not fenced, closed, ...)."""

    def refusal(self) -> type[errors.ManagedLedgerError] | None:
        """The error new adds get while the managed ledger closes or terminates."""

    async def create_ledger(self) -> client_api.WriteHandle: ...

    def rolled_over(self, old: client_api.WriteHandle) -> None:
        """The list now names a new current ledger; `old` is to be sealed."""

    def discard_ledger(self, ledger_id: int) -> None:
        """A ledger created for nothing (the rollover lost): delete it in the background."""


class Rollover:
    def __init__(
        self,
        owner: RolloverOwner,
        ledgers: ledger_list.LedgerList,
        pipeline: add_pipeline.AddPipeline,
    ):
        self._owner = owner
        self._ledgers = ledgers
        self._pipeline = pipeline
        self._task: asyncio.Task[None] | None = None
        #: Whether a rollover runs (adds wait); an attribute, read on every add.
        self.running = False
        #: Pauses before replacing ledgers that break in a row, with no add durable in
        #: between, and the entries added count when the last of them broke.
        self._after_breaks = LEDGER_RETRY.start()
        self._added_at_last_break = -1

    def start(self) -> None:
        if self._task is None:
            self.running = True
            self._pipeline.hold(True)
            self._task = asyncio.ensure_future(self._run())

    async def wait(self) -> None:
        """Until a running rollover is over (without cancelling it)."""
        task = self._task
        if task is not None:
            await asyncio.shield(task)

    async def _run(self) -> None:
        old = self._ledgers.current
        assert old is not None
        started_ms = self._owner.now_ms()
        creating: asyncio.Future[client_api.WriteHandle] | None = None
        try:
            if self._ledgers.current_broken:
                await self._pause_after_breaks()
            creating = asyncio.ensure_future(self._owner.create_ledger())
            await self._pipeline.inflight_drained()
            self._expire_waiting()
            try:
                new = await creating
            except bookie_errors.NotEnoughBookiesError as exc:
                held = await self._create_while_adds_wait(exc)
                if held is None:
                    return
                new = held
            except bookie_errors.BookieError as exc:
                self._pipeline.fail_queued(errors.ManagedLedgerWriteError(f"no new ledger: {exc}"))
                return
            try:
                switched = await self._switch_to(old, new)
            except errors.ManagedLedgerError as exc:
                # The metadata store failed (not a lost CAS): these adds fail, the next retries.
                self._pipeline.fail_queued(
                    errors.ManagedLedgerWriteError(f"rollover failed: {exc}"))
                switched = False
            if not switched:
                self._owner.discard_ledger(new.ledger_id)
                return
            self._owner.rolled_over(old)
            self._owner.stats.ledger_switched(self._owner.now_ms() - started_ms)
        except BaseException:
            if creating is not None and not creating.done():
                creating.cancel()
            raise
        finally:
            self._task = None
            self.running = False
            self._pipeline.hold(False)
            self._pipeline.pump()

    async def _pause_after_breaks(self) -> None:
        """Before replacing a broken ledger: at once the first time, then with a doubling
        pause while the new ledgers break before any add succeeds on them."""
        added = self._owner.entries_added_counter
        first_break = added != self._added_at_last_break
        self._added_at_last_break = added
        if first_break:
            self._after_breaks.reset()
            return
        pause_s = self._after_breaks.next_delay()
        timeout_ms = int(self._owner.config.add_entry_timeout_seconds * 1000)
        left_ms = self._pipeline.until_first_expires_ms(timeout_ms)
        if left_ms is not None:
            pause_s = min(pause_s, left_ms / 1000)
        log.warning("%s: ledgers keep failing (%d in a row), %d adds wait %.1f s for the next",
                    self._owner.name, self._after_breaks.attempts + 1, self._pipeline.waiting,
                    pause_s)
        await asyncio.sleep(pause_s)

    def _expire_waiting(self) -> None:
        """Fail the adds that waited managedLedgerAddEntryTimeoutSeconds already."""
        failure = self._owner.last_write_failure
        timeout_ms = int(self._owner.config.add_entry_timeout_seconds * 1000)
        self._pipeline.expire_waiting(
            timeout_ms, failure if failure is not None else RuntimeError("ledger rollover"))

    async def _switch_to(self, old: client_api.WriteHandle, new: client_api.WriteHandle) -> bool:
        async with self._ledgers.lock:
            if not self._owner.takes_adds():
                return False
            return await self._ledgers.switch_to(old, new, self._owner.now_ms())

    async def _create_while_adds_wait(
        self, failure: bookie_errors.NotEnoughBookiesError
    ) -> client_api.WriteHandle | None:
        """No ledger can be created (not enough writable bookies): the queued adds wait
        while creation is retried with a growing pause, instead of failing at once and
        making their producers reconnect and resend in a tight loop. An add that waited
        managedLedgerAddEntryTimeoutSeconds fails. None when no add is left waiting (or
        the managed ledger is closing)."""
        name = self._owner.name
        log.warning("%s: cannot create a ledger, %d adds wait: %s", name,
                    self._pipeline.waiting, failure)
        delays = LEDGER_RETRY.start()
        while True:
            timeout_ms = int(self._owner.config.add_entry_timeout_seconds * 1000)
            self._pipeline.expire_waiting(timeout_ms, failure)
            if not self._pipeline.waiting or not self._owner.takes_adds():
                return None
            refusal = self._owner.refusal()
            if refusal is not None:
                self._pipeline.fail_queued(refusal(f"{name} is closing"))
                return None
            left_ms = self._pipeline.until_first_expires_ms(timeout_ms)
            pause_s = delays.next_delay()
            await asyncio.sleep(pause_s if left_ms is None else min(pause_s, left_ms / 1000))
            try:
                return await self._owner.create_ledger()
            except bookie_errors.NotEnoughBookiesError as exc:
                failure = exc
                log.warning("%s: still cannot create a ledger, %d adds wait: %s",
                            name, self._pipeline.waiting, exc)
