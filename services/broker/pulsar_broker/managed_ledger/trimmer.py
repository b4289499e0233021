"""Trimming a managed ledger: deleting the ledgers its durable cursors consumed.

The decision is `trimming.ledgers_to_delete` (pure); this runs it. Ledgers
leave the persisted list first and are deleted from the bookies after, so
the list never names a ledger that is gone. Requests are coalesced: a
mark-delete that moves while a trim runs asks for one more round, not one
per acknowledgement.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from pulsar_broker.managed_ledger import api, config, errors, ledger_list, trimming

log = logging.getLogger(__name__)


class TrimOwner(Protocol):
    """What trimming needs from its managed ledger."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> config.ManagedLedgerConfig: ...

    def now_ms(self) -> int: ...

    def trimmable(self) -> bool:
        """Whether the managed ledger may change its list now (open or terminated)."""

    def slowest_mark_delete(self) -> api.Position | None:
        """The mark-delete position of the slowest durable cursor; None without cursors."""

    async def forget_ledger(self, ledger_id: int) -> None:
        """Delete a ledger no longer listed: close its read handle, drop it from the cache,
        remove it from the bookies."""


class Trimmer:
    __slots__ = ("_again", "_ledgers", "_lock", "_owner", "_task")

    def __init__(self, owner: TrimOwner, ledgers: ledger_list.LedgerList):
        self._owner = owner
        self._ledgers = ledgers
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._again = False

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The trim running in the background, if any (a finished one is not kept: issue 16,
        ~0.5 KB per topic)."""
        return self._task

    def schedule(self) -> None:
        """Trim soon (coalesced): called when a durable cursor's mark-delete moves."""
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.ensure_future(self._loop())
        self._task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        if self._task is task:
            self._task = None
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: trimming stopped", self._owner.name, exc_info=task.exception())

    def cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    async def _loop(self) -> None:
        while True:
            self._again = False
            try:
                await self.trim()
            except errors.ManagedLedgerError as exc:
                log.warning("%s: trimming failed: %s", self._owner.name, exc)
            if not self._again:
                return

    async def trim(self, retention: trimming.Retention | None = None) -> list[int]:
        """Delete ledgers every durable cursor is past and retention lets go; their ids.
        retention overrides the configured one (truncate passes KEEP_NOTHING)."""
        async with self._lock:
            doomed_ids = await self._drop_from_list(retention)
            for ledger_id in doomed_ids:
                await self._owner.forget_ledger(ledger_id)
            return doomed_ids

    async def _drop_from_list(self, retention: trimming.Retention | None) -> list[int]:
        """Remove the ledgers that may go from the persisted list (first, so none dangles)."""
        async with self._ledgers.lock:
            if not self._owner.trimmable():
                return []
            if retention is None:
                ml_config = self._owner.config
                retention = trimming.Retention(ml_config.retention_time_ms,
                                               ml_config.retention_size_bytes)
            doomed = trimming.ledgers_to_delete(
                self._ledgers.ledgers,
                self._ledgers.newest_ledger_id,
                self._owner.slowest_mark_delete(),
                retention,
                self._owner.now_ms(),
            )
            if not doomed:
                return []
            doomed_ids = sorted(info.ledger_id for info in doomed)
            await self._ledgers.drop(doomed_ids)
            return doomed_ids
