"""The in-process ledger client of `pulsar standalone`: one local bookie, no network.

It implements the LedgerClient contract over a single LedgerStorage (the
bookie engine living in the same process) and keeps ledger metadata in the
metadata store, exactly where the replicated client keeps it, so a
standalone data directory holds ordinary ledgers. Every ledger has
ensemble = write quorum = ack quorum = 1 and that one bookie as its ensemble.

The writer of a ledger is the only one assigning entry ids; appends complete
in the order they were made and the last-add-confirmed (LAC) advances without
gaps. Opening with recovery fences the ledger in storage (the old writer can
add nothing more), finds the last entry and seals the ledger by CAS.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Callable, Mapping, Sequence

from pulsar_common import clock
from pulsar_common.metadata import api as metadata_api

from pulsar_bookie import errors, types
from pulsar_bookie.client import api, ledger_metadata
from pulsar_bookie.storage import api as storage_api

#: Attempts at sealing a ledger when other parties keep changing its metadata.
RECOVERY_ATTEMPTS_MAX = 5


#: A storage's add_entry_future (the engine has one): the add without a coroutine.
_StoreFuture = Callable[
    [types.LedgerId, types.EntryId, types.EntryId, bytes, bytes], "asyncio.Future[object]"
]
#: (entry id, payload size, storage's future, the caller's future)
_PendingAppend = tuple[
    types.EntryId, int, "asyncio.Future[object]", "asyncio.Future[types.EntryId]"
]


def _again(error: BaseException, ledger_id: int) -> errors.BookieError:
    """A fresh error of the same kind, for every append after the writer broke."""
    kind = type(error) if isinstance(error, errors.BookieError) else errors.BookieError
    return kind(f"ledger {ledger_id}: {error}")


class LocalReadHandle:
    """Reads of one ledger up to its LAC (a closed ledger's LAC is its last entry)."""

    __slots__ = ("_lac", "_length", "_storage", "_versioned")

    def __init__(
        self,
        storage: storage_api.LedgerStorage,
        versioned: ledger_metadata.VersionedMetadata,
        last_add_confirmed: types.EntryId,
        length: int,
    ):
        self._storage = storage
        self._versioned = versioned
        self._lac = last_add_confirmed
        self._length = length

    @property
    def ledger_id(self) -> types.LedgerId:
        return self._versioned.metadata.ledger_id

    @property
    def metadata(self) -> api.LedgerMetadata:
        return self._versioned.metadata

    @property
    def last_add_confirmed(self) -> types.EntryId:
        return self._lac

    @property
    def length(self) -> int:
        return self._length

    async def read(self, first_entry_id: int, last_entry_id: int) -> Sequence[api.LedgerEntry]:
        if first_entry_id < 0 or last_entry_id < first_entry_id:
            raise errors.NoSuchEntryError(
                f"ledger {self.ledger_id}: bad range {first_entry_id}..{last_entry_id}"
            )
        if last_entry_id > self._lac:
            raise errors.NoSuchEntryError(
                f"ledger {self.ledger_id}: entry {last_entry_id} is beyond the last add "
                f"confirmed ({self._lac})"
            )
        entries = []
        for entry_id in range(first_entry_id, last_entry_id + 1):
            stored = await self._storage.read_entry(self.ledger_id, types.EntryId(entry_id))
            entries.append(api.LedgerEntry(self.ledger_id, stored.entry_id, stored.payload))
        return entries

    async def read_last_add_confirmed(self) -> types.EntryId:
        if not self.metadata.is_closed:
            seen = await self._storage.read_last_add_confirmed(self.ledger_id)
            self._lac = max(self._lac, seen)
        return self._lac

    async def close(self) -> None:
        return None


class LocalWriteHandle(LocalReadHandle):
    """The single writer of a ledger: ids in call order, completions in the same order."""

    __slots__ = ("_closing", "_error", "_next_entry_id", "_pending", "_store", "_store_future",
                 "_tail")

    def __init__(
        self,
        storage: storage_api.LedgerStorage,
        store: ledger_metadata.LedgerMetadataStore,
        versioned: ledger_metadata.VersionedMetadata,
    ):
        super().__init__(storage, versioned, types.INVALID_ENTRY_ID, 0)
        self._store = store
        self._next_entry_id = 0
        #: Appends not completed yet, oldest first: (entry id, size, stored, result).
        #: Bounded by the callers' own limits (the managed ledger's pending adds). None when
        #: there is none: an empty deque costs ~760 bytes, and a broker holds a write
        #: handle per topic (issue 16).
        self._pending: collections.deque[_PendingAppend] | None = None
        #: The newest append's result future (close waits for it).
        self._tail: asyncio.Future[types.EntryId] | None = None
        self._error: BaseException | None = None
        self._closing = False
        self._store_future: _StoreFuture | None = getattr(storage, "add_entry_future", None)

    async def append(self, payload: bytes) -> types.EntryId:
        return await asyncio.shield(self.append_future(payload))

    def append_future(self, payload: bytes) -> asyncio.Future[types.EntryId]:
        """Append without a coroutine: a future for the entry id, completed in call order
        (an entry is confirmed only after its predecessors). Refusals raise at once."""
        if self._closing or self.metadata.is_closed:
            raise errors.LedgerClosedError(f"ledger {self.ledger_id} is closed")
        if self._error is not None:
            raise _again(self._error, self.ledger_id) from self._error
        entry_id = types.EntryId(self._next_entry_id)
        self._next_entry_id += 1
        loop = asyncio.get_running_loop()
        try:
            stored = self._store_entry(entry_id, payload)
        except Exception as exc:  # noqa: BLE001 - refused by storage: fails in order below
            stored = loop.create_future()
            stored.set_exception(exc)
        result: asyncio.Future[types.EntryId] = loop.create_future()
        self._tail = result
        pending = self._pending
        if pending is None:
            pending = self._pending = collections.deque()
        pending.append((entry_id, len(payload), stored, result))
        stored.add_done_callback(self._complete_in_order)
        return result

    def _store_entry(self, entry_id: types.EntryId, payload: bytes) -> asyncio.Future[object]:
        password = self.metadata.password
        if self._store_future is not None:
            return self._store_future(self.ledger_id, entry_id, self._lac, payload, password)
        return asyncio.ensure_future(
            self._storage.add_entry(self.ledger_id, entry_id, self._lac, payload, password)
        )

    def _complete_in_order(self, _stored: asyncio.Future[object] | None = None) -> None:
        pending = self._pending
        if pending is None:
            return
        while pending and pending[0][2].done():
            entry_id, size, stored, result = pending.popleft()
            failure: BaseException | None
            if stored.cancelled():
                failure = errors.BookieError(f"append of {entry_id} interrupted")
            else:
                failure = stored.exception()
            if failure is None and self._error is not None:
                failure = self._error  # an earlier append failed: this one is not confirmed
            if failure is not None:
                self._error = self._error or failure
                if not result.done():
                    result.set_exception(_again(failure, self.ledger_id))
                continue
            self._lac = entry_id
            self._length += size
            if not result.done():
                result.set_result(entry_id)
        if not pending:
            self._pending = None

    async def close(self) -> None:
        """Wait for appends in flight, then seal the ledger at the LAC by CAS."""
        if self.metadata.is_closed:
            return
        self._closing = True
        if self._tail is not None and not self._tail.done():
            await asyncio.wait([self._tail])
        sealed = dataclasses.replace(
            self.metadata,
            state=api.LedgerState.CLOSED,
            last_entry_id=self._lac,
            length=self._length,
        )
        try:
            self._versioned = await self._store.write(sealed, self._versioned.version)
        except errors.MetadataVersionError:
            current = await self._store.read(self.ledger_id)
            same_end = current.metadata.last_entry_id == self._lac
            if not (current.metadata.is_closed and same_end):
                raise
            self._versioned = current


class LocalLedgerClient:
    """LedgerClient over one in-process bookie and the metadata store."""

    def __init__(
        self,
        storage: storage_api.LedgerStorage,
        store: metadata_api.MetadataStore,
        bookie_id: types.BookieId,
        *,
        now_ms: clock.NowMs = clock.wall_clock_ms,
    ):
        self._storage = storage
        self._meta = ledger_metadata.LedgerMetadataStore(store)
        self._bookie_id = bookie_id
        self._now_ms = now_ms
        self._closed = False

    async def create_ledger(
        self,
        ensemble_size: int,
        write_quorum_size: int,
        ack_quorum_size: int,
        custom_metadata: Mapping[str, str] | None = None,
        password: bytes = b"",
    ) -> LocalWriteHandle:
        self._check_open()
        if (ensemble_size, write_quorum_size, ack_quorum_size) != (1, 1, 1):
            raise errors.BookieError(
                "not enough bookies: the in-process client has exactly one, so ensemble, "
                f"write quorum and ack quorum must be 1 (got {ensemble_size}/"
                f"{write_quorum_size}/{ack_quorum_size})"
            )
        ledger_id = await self._meta.new_ledger_id()
        metadata = ledger_metadata.new_open_ledger(
            ledger_id, (1, 1, 1), (self._bookie_id,), self._now_ms(), custom_metadata, password)
        versioned = await self._meta.create(metadata)
        return LocalWriteHandle(self._storage, self._meta, versioned)

    async def open_ledger(
        self, ledger_id: types.LedgerId, *, recovery: bool = True, password: bytes = b""
    ) -> LocalReadHandle:
        self._check_open()
        versioned = await self._meta.read(ledger_id)
        if versioned.metadata.password != password:
            raise errors.UnauthorizedAccessError(f"ledger {ledger_id}: wrong password")
        if recovery and not versioned.metadata.is_closed:
            versioned = await self._recover(versioned)
        metadata = versioned.metadata
        if metadata.is_closed:
            return LocalReadHandle(
                self._storage, versioned, metadata.last_entry_id, metadata.length
            )
        lac = await self._read_lac(ledger_id)
        return LocalReadHandle(self._storage, versioned, lac, 0)

    async def get_ledger_metadata(self, ledger_id: types.LedgerId) -> api.LedgerMetadata:
        self._check_open()
        return (await self._meta.read(ledger_id)).metadata

    async def delete_ledger(self, ledger_id: types.LedgerId) -> None:
        self._check_open()
        try:
            await self._storage.delete_ledger(ledger_id)
        except errors.NoSuchLedgerError:
            pass
        await self._meta.remove(ledger_id)

    async def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise errors.BookieUnavailableError("the ledger client is closed")

    async def _read_lac(self, ledger_id: types.LedgerId) -> types.EntryId:
        try:
            return await self._storage.read_last_add_confirmed(ledger_id)
        except errors.NoSuchLedgerError:
            return types.INVALID_ENTRY_ID

    async def _recover(
        self, versioned: ledger_metadata.VersionedMetadata
    ) -> ledger_metadata.VersionedMetadata:
        """Fence, find the last entry, and seal the ledger; tolerate a racing recovery."""
        for _ in range(RECOVERY_ATTEMPTS_MAX):
            if versioned.metadata.is_closed:
                return versioned
            try:
                return await self._recover_once(versioned)
            except errors.MetadataVersionError:
                versioned = await self._meta.read(versioned.metadata.ledger_id)
        raise errors.MetadataVersionError(
            f"ledger {versioned.metadata.ledger_id}: metadata kept changing during recovery"
        )

    async def _recover_once(
        self, versioned: ledger_metadata.VersionedMetadata
    ) -> ledger_metadata.VersionedMetadata:
        metadata = versioned.metadata
        if metadata.state is api.LedgerState.OPEN:
            in_recovery = dataclasses.replace(metadata, state=api.LedgerState.IN_RECOVERY)
            versioned = await self._meta.write(in_recovery, versioned.version)
        ledger_id = metadata.ledger_id
        try:
            lac = await self._storage.fence_ledger(ledger_id, metadata.password)
        except errors.NoSuchLedgerError:
            lac = types.INVALID_ENTRY_ID
        last_entry_id, length = await self._scan_entries(ledger_id, lac)
        sealed = dataclasses.replace(
            versioned.metadata,
            state=api.LedgerState.CLOSED,
            last_entry_id=last_entry_id,
            length=length,
        )
        return await self._meta.write(sealed, versioned.version)

    async def _scan_entries(
        self, ledger_id: types.LedgerId, lac: types.EntryId
    ) -> tuple[types.EntryId, int]:
        """The last entry of the contiguous run from 0 (at least the LAC) and its byte length.

        Every entry up to the LAC was acknowledged to the writer; entries after it
        may be there too (stored, acknowledgement not yet seen). The ledger ends at
        the first missing one, since the writer never acknowledges past a gap.
        """
        length = 0
        entry_id = 0
        while True:
            try:
                stored = await self._storage.read_entry(ledger_id, types.EntryId(entry_id))
            except (errors.NoSuchEntryError, errors.NoSuchLedgerError):
                if entry_id <= lac:
                    raise errors.BookieError(
                        f"ledger {ledger_id}: entry {entry_id} at or below LAC {lac} is missing"
                    ) from None
                return types.EntryId(entry_id - 1), length
            length += len(stored.payload)
            entry_id += 1


def _implements_contract(client: LocalLedgerClient) -> api.LedgerClient:
    """Never called: mypy checks here that the client satisfies the contract."""
    return client
