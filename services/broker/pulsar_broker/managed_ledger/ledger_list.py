"""The ledger list of a managed ledger: its sealed ledgers, the current one, and the record.

Holds what the managed ledger's metadata record says (ledgers with entries,
size and timestamp; the terminated position; properties), the current
ledger's handle and counters, and the `LedgerLayout` cursors see. Every
change of the record is a compare-and-set of the version last read or
written; a lost CAS means another broker took the topic over, and the
owner is told to fence itself. Callers hold `lock` around a change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence

from pulsar_bookie.client import api as client_api
from pulsar_common.metadata import api as metadata_api

from pulsar_broker.managed_ledger import api, config, errors, layout, metadata


class LedgerList:
    def __init__(self, meta: metadata.ManagedLedgerMetadata, fence: Callable[[str], None]):
        self.meta = meta
        self._fence = fence
        self.layout = layout.LedgerLayout()
        #: Held around every change of the persisted record.
        self.lock = asyncio.Lock()
        self._version = metadata_api.VERSION_ABSENT
        self.properties: dict[str, str] = {}
        self.terminated_position: api.Position | None = None
        self.closed: list[api.LedgerInfo] = []
        self.current: client_api.WriteHandle | None = None
        self.current_entries = 0
        self.current_size = 0
        self.current_created_ms = 0
        #: Adds handed to the current ledger (durable or not yet), for rollover decisions.
        self.initiated_entries = 0
        self.initiated_size = 0
        #: A write to the current ledger failed: the next add goes to a new ledger.
        self.current_broken = False

    # -- reading the record -------------------------------------------------------

    async def load(self) -> list[api.LedgerInfo]:
        """Read the record (nothing when the managed ledger is new); its ledgers."""
        versioned = await self.meta.read_info()
        info = versioned.value if versioned is not None else metadata.ManagedLedgerInfo()
        if versioned is not None:
            self._version = versioned.version
        self.properties = dict(info.properties)
        self.terminated_position = info.terminated_position
        return list(info.ledgers)

    def set_closed(self, ledgers: Sequence[api.LedgerInfo]) -> None:
        """The sealed ledgers found at start-up, oldest first."""
        self.closed = list(ledgers)
        for info in ledgers:
            self.layout.add_closed_ledger(info.ledger_id, info.entries)

    # -- views ---------------------------------------------------------------------

    def current_info(self) -> api.LedgerInfo | None:
        if self.current is None:
            return None
        return api.LedgerInfo(
            self.current.ledger_id, self.current_entries, self.current_size,
            self.current_created_ms,
        )

    @property
    def ledgers(self) -> list[api.LedgerInfo]:
        current = self.current_info()
        return list(self.closed) + ([current] if current is not None else [])

    @property
    def newest_ledger_id(self) -> int | None:
        ids = self.layout.ledger_ids
        return ids[-1] if ids else None

    def current_is_full(self, ml_config: config.ManagedLedgerConfig, now_ms: int) -> bool:
        """Whether the current ledger should be rolled over (entries, size or age)."""
        return is_full(ml_config, self.initiated_entries, self.initiated_size,
                       now_ms - self.current_created_ms)

    # -- changes -------------------------------------------------------------------

    async def write(self, ledgers: Iterable[api.LedgerInfo]) -> None:
        """CAS the record with these ledgers; losing fences the owner. Hold `lock`."""
        info = metadata.ManagedLedgerInfo(
            tuple(ledgers), self.terminated_position, dict(self.properties)
        )
        try:
            self._version = await self.meta.write_info(info, self._version)
        except errors.MetadataVersionError as exc:
            self._fence(str(exc))
            raise

    def start_ledger(self, handle: client_api.WriteHandle, now_ms: int) -> None:
        """Make handle the current ledger (already in the persisted list)."""
        self.current = handle
        self.current_entries = self.current_size = 0
        self.initiated_entries = self.initiated_size = 0
        self.current_created_ms = now_ms
        self.current_broken = False
        self.layout.add_open_ledger(handle.ledger_id)

    async def switch_to(self, old: client_api.WriteHandle, new: client_api.WriteHandle,
                        now_ms: int) -> bool:
        """Persist the list with `old` sealed (dropped when empty) and `new` current, then
        make `new` current. False when the CAS was lost. Hold `lock`."""
        sealed = api.LedgerInfo(old.ledger_id, self.current_entries, self.current_size, now_ms)
        kept = [sealed] if sealed.entries > 0 else []
        fresh = api.LedgerInfo(new.ledger_id, 0, 0, now_ms)
        try:
            await self.write(self.closed + kept + [fresh])
        except errors.ManagedLedgerFencedError:
            return False
        self.closed.extend(kept)
        self.layout.close_open_ledger(sealed.entries)
        if not kept:
            self.layout.remove_ledger(old.ledger_id)
        self.start_ledger(new, now_ms)
        return True

    async def drop(self, ledger_ids: Sequence[int]) -> None:
        """Persist the list without these sealed ledgers, then forget them. Hold `lock`."""
        remaining = [i for i in self.closed if i.ledger_id not in ledger_ids]
        current = self.current_info()
        await self.write(remaining + ([current] if current else []))
        self.closed = remaining
        for ledger_id in ledger_ids:
            self.layout.remove_ledger(ledger_id)


def is_full(
    ml_config: config.ManagedLedgerConfig, entries: int, size_bytes: int, age_ms: int
) -> bool:
    """Whether a ledger holding this much, this old, should be rolled over: never when
    empty; always past the maximum age; past the entry or size limit once it is at least
    the minimum rollover age."""
    if entries == 0:
        return False
    max_age_ms = ml_config.max_ledger_rollover_time_ms
    if max_age_ms > 0 and age_ms >= max_age_ms:
        return True
    space_full = (
        entries >= ml_config.max_entries_per_ledger
        or size_bytes >= ml_config.max_size_per_ledger_bytes
    )
    return space_full and age_ms >= ml_config.min_ledger_rollover_time_ms
