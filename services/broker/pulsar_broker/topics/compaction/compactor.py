"""Compaction of one topic, and the compacted view it leaves (Apache's two-phase compactor).

The compactor reads what came after the last compaction's horizon, merged
behind the entries of the current compacted ledger. Phase one finds the
latest message of each key; phase two reads the same entries again and
writes the survivors to a new compacted ledger. The new ledger becomes
current in one step: the `__compaction` cursor is marked deleted up to the
new horizon with the ledger id in its properties (`CompactedTopicLedger`),
flushed to the metadata store. Only then is the previous compacted ledger
deleted. A broker killed before that step leaves the previous view in force
(the unfinished ledger is orphaned); killed after it, the new one.

The horizon is also kept in the cursor's properties, so that a mark-delete
moved by something else (message TTL, an admin skip) never moves it.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from pulsar_bookie import types
from pulsar_bookie.client import api as client_api
from pulsar_common import clock

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml
from pulsar_broker.topics.compaction import compacted_ledger, retention
from pulsar_broker.topics.compaction.compacted_ledger import CompactedView

log = logging.getLogger(__name__)

#: Apache's name of the subscription the compactor reads through.
COMPACTION_SUBSCRIPTION = "__compaction"
#: Cursor property holding the current compacted ledger's id (Apache's name).
COMPACTED_TOPIC_LEDGER_PROPERTY = "CompactedTopicLedger"
HORIZON_LEDGER_PROPERTY = "CompactionHorizonLedgerId"
HORIZON_ENTRY_PROPERTY = "CompactionHorizonEntryId"
#: Entries read from the topic per request while compacting.
READ_BATCH_ENTRIES = 500
#: Appends to the new compacted ledger in flight at once.
APPENDS_IN_FLIGHT_MAX = 256


class Status(enum.Enum):
    """Apache's LongRunningProcessStatus values."""

    NOT_RUN = "NOT_RUN"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    ERROR = "ERROR"


class CompactionInProgressError(errors.ConflictError):
    """A compaction of this topic is already running (409, as Apache answers)."""


@dataclass(frozen=True)
class LedgerQuorum:
    ensemble_size: int = 1
    write_quorum: int = 1
    ack_quorum: int = 1



class TopicCompaction:
    """The compaction state of one topic: its compacted view, status and last results."""

    def __init__(self, topic_name: str, ledger: ml.ManagedLedger,
                 client: client_api.LedgerClient, *, quorum: LedgerQuorum = LedgerQuorum(),
                 retain_null_key: bool = False,
                 now_ms: clock.NowMs = clock.wall_clock_ms) -> None:
        self.topic_name = topic_name
        self._ledger = ledger
        self._client = client
        self.quorum = quorum
        self.retain_null_key = retain_null_key
        self._now_ms = now_ms
        self.status = Status.NOT_RUN
        self.last_error = ""
        self.removed_event_count = 0
        self.succeed_timestamp_ms = 0
        self.failed_timestamp_ms = 0
        self.duration_ms = 0
        self._view: CompactedView | None = None
        self._loaded = False
        self._load_lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    # The compacted view

    def _compaction_cursor(self) -> ml.ManagedCursor | None:
        for cursor in self._ledger.cursors:
            if cursor.name == COMPACTION_SUBSCRIPTION:
                return cursor
        return None

    @staticmethod
    def _horizon_of(cursor: ml.ManagedCursor) -> ml.Position:
        props = cursor.properties
        if HORIZON_LEDGER_PROPERTY in props and HORIZON_ENTRY_PROPERTY in props:
            return ml.Position(props[HORIZON_LEDGER_PROPERTY], props[HORIZON_ENTRY_PROPERTY])
        return cursor.mark_delete_position

    async def view(self) -> CompactedView | None:
        """The current compacted view, loaded from the compacted ledger on first use."""
        if self._loaded:
            return self._view
        async with self._load_lock:
            if not self._loaded:
                cursor = self._compaction_cursor()
                ledger_id = None if cursor is None else cursor.properties.get(
                    COMPACTED_TOPIC_LEDGER_PROPERTY)
                if cursor is not None and ledger_id is not None:
                    self._view = await CompactedView.load(self._client, ledger_id,
                                                          self._horizon_of(cursor))
                self._loaded = True
        return self._view

    @property
    def loaded_view(self) -> CompactedView | None:
        """The view if it was loaded already (stats never wait for a load)."""
        return self._view

    def horizon(self) -> ml.Position:
        """The last position compacted (EARLIEST before the first compaction): the
        compaction backlog is what came after it."""
        cursor = self._compaction_cursor()
        return ml.EARLIEST if cursor is None else self._horizon_of(cursor)

    # Running

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def trigger(self) -> asyncio.Task[None]:
        """Start a compaction in the background; CompactionInProgressError if one runs."""
        if self.running:
            raise CompactionInProgressError("Compaction already in progress")
        self.status = Status.RUNNING
        self.last_error = ""
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self._task

    async def _run(self) -> None:
        started = self._now_ms()
        try:
            self.removed_event_count = await self.compact()
        except asyncio.CancelledError:
            self.status = Status.ERROR
            self.last_error = "Compaction was cancelled"
            raise
        except Exception as exc:  # noqa: BLE001 - reported in the compaction status
            log.exception("compaction of %s failed", self.topic_name)
            self.status = Status.ERROR
            self.last_error = str(exc) or type(exc).__name__
            self.failed_timestamp_ms = self._now_ms()
        else:
            self.status = Status.SUCCESS
            self.succeed_timestamp_ms = self._now_ms()
        finally:
            self.duration_ms = self._now_ms() - started

    async def compact(self) -> int:
        """Compact what came after the horizon; returns the number of messages removed."""
        cursor = await self._ledger.open_cursor(COMPACTION_SUBSCRIPTION,
                                                ml.InitialPosition.EARLIEST)
        previous = await self.view()
        after = self._horizon_of(cursor)
        end = self._ledger.last_confirmed_entry
        if end.entry_id < 0 or end <= after:
            return 0
        latest = retention.LatestByKey()
        #: Entries kept whole whatever their keys (encrypted batches cannot be read inside).
        whole: set[ml.Position] = set()
        read = 0
        async for raw in self._entries(previous, after, end):
            count = latest.add_entry(raw.position, raw.data)
            if count is not None:
                read += count
                continue
            entry = retention.readable(raw.position, raw.data)
            if entry is not None and entry.messages is None:
                whole.add(entry.position)
        wanted = None if self.retain_null_key else latest.positions() | whole
        handle, positions, kept = await self._write(previous, after, end, latest, wanted)
        properties = dict(cursor.properties)
        properties.update({COMPACTED_TOPIC_LEDGER_PROPERTY: handle.ledger_id,
                           HORIZON_LEDGER_PROPERTY: end.ledger_id,
                           HORIZON_ENTRY_PROPERTY: end.entry_id})
        await cursor.mark_delete(max(end, cursor.mark_delete_position), properties)
        await cursor.flush()
        # The switch is durable: from here on the new ledger is the compacted view.
        self._view = CompactedView(handle.ledger_id, end, positions,
                                   await self._client.open_ledger(handle.ledger_id,
                                                                  recovery=False))
        self._loaded = True
        if previous is not None:
            await previous.close()
            await self._client.delete_ledger(types.LedgerId(previous.ledger_id))
        log.info("compacted %s up to %s: %d messages read, %d kept, ledger %d",
                 self.topic_name, end, read, kept, handle.ledger_id)
        return read - kept

    async def _write(self, previous: CompactedView | None, after: ml.Position,
                     end: ml.Position, latest: retention.LatestByKey,
                     wanted: set[ml.Position] | None,
                     ) -> tuple[client_api.WriteHandle, list[ml.Position], int]:
        """Phase two: the survivors in a new, closed compacted ledger. Entries not in
        wanted (when given) hold no survivor and are skipped unopened."""
        handle = await self._client.create_ledger(
            self.quorum.ensemble_size, self.quorum.write_quorum, self.quorum.ack_quorum,
            {compacted_ledger.COMPACTED_TOPIC_TAG: self.topic_name})
        positions: list[ml.Position] = []
        kept = 0
        in_flight: collections.deque[asyncio.Future[int]] = collections.deque()
        try:
            async for raw in self._entries(previous, after, end):
                if wanted is not None and raw.position not in wanted:
                    continue
                entry = retention.readable(raw.position, raw.data)
                if entry is None:
                    continue
                data = retention.compact_entry(entry, latest, self.retain_null_key)
                if data is None:
                    continue
                kept += sum(1 for m in retention.keyed_messages(entry)
                            if latest.keeps(m, self.retain_null_key))
                in_flight.append(asyncio.ensure_future(
                    handle.append(compacted_ledger.encode_entry(entry.position, data))))
                positions.append(entry.position)
                if len(in_flight) >= APPENDS_IN_FLIGHT_MAX:
                    await in_flight.popleft()
            while in_flight:
                await in_flight.popleft()
            await handle.close()
        except BaseException:
            for pending in in_flight:
                pending.cancel()
            await self._discard(handle)
            raise
        return handle, positions, kept

    async def _discard(self, handle: client_api.WriteHandle) -> None:
        try:
            await handle.close()
        finally:
            await self._client.delete_ledger(handle.ledger_id)

    async def _entries(self, previous: CompactedView | None, after: ml.Position,
                       end: ml.Position) -> AsyncIterator[ml.Entry]:
        """The previous compacted entries, then the topic's entries in (after, end]."""
        if previous is not None:
            async for chunk in previous.chunks():
                for entry in chunk:
                    yield entry
                    # Parsing batches is CPU work: let the broker's other tasks run between
                    # entries (cached reads never yield on their own).
                    await asyncio.sleep(0)
        reader = self._ledger.new_non_durable_cursor(after, None, inclusive=False)
        try:
            while True:
                entries = await reader.read_entries(READ_BATCH_ENTRIES)
                for entry in entries:
                    if entry.position > end:
                        return
                    yield entry
                    await asyncio.sleep(0)
                if not entries or entries[-1].position >= end:
                    return
        finally:
            await reader.close()

    # Lifecycle

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - reported in status
                pass
        if self._view is not None:
            await self._view.close()

    async def delete(self) -> None:
        """The topic is deleted: its compacted ledger goes too."""
        view = await self.view()
        await self.close()
        if view is not None:
            await self._client.delete_ledger(types.LedgerId(view.ledger_id))
        self._view = None
