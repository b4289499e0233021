"""Under-replication records in the metadata store (BookKeeper's underreplication layout in spirit).

    /underreplication/ledgers/<ledger id>        persistent JSON {"missingReplicas": [...],
                                                 "placementViolation": bool, "ctime": ms}:
                                                 the ledger has a fragment on these bookies
                                                 (or fragments spread over too few racks)
                                                 and must be re-replicated
    /underreplication/locks/<ledger id>          ephemeral: a worker is re-replicating it
    /underreplication/auditorelection            ephemeral: the elected auditor's JSON
    /underreplication/lostBookieRecoveryDelay    decimal seconds (cluster-wide; a rewrite of
                                                 the same value asks the auditor to audit now)
    /underreplication/decommissioning/<bookie>   persistent: the bookie is being drained

Kept outside /ledgers, whose children are ledger ids only.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable

from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import errors as metadata_errors

from pulsar_bookie import types

ROOT = "/underreplication"
LEDGERS_PATH = f"{ROOT}/ledgers"
LOCKS_PATH = f"{ROOT}/locks"
AUDITOR_ELECTION_PATH = f"{ROOT}/auditorelection"
LOST_BOOKIE_RECOVERY_DELAY_PATH = f"{ROOT}/lostBookieRecoveryDelay"
DECOMMISSIONING_PATH = f"{ROOT}/decommissioning"


@dataclasses.dataclass(frozen=True)
class Mark:
    """One under-replicated ledger: the bookies whose copies must be replaced."""

    ledger_id: types.LedgerId
    missing_replicas: frozenset[types.BookieId]
    ctime_ms: int
    #: Version of the record, for removing it only if nobody re-marked it meanwhile.
    version: int = -1
    #: Some closed fragment has bookies in one rack while other racks have room.
    placement_violation: bool = False

    def to_json(self) -> bytes:
        return json.dumps({"missingReplicas": sorted(self.missing_replicas),
                           "placementViolation": self.placement_violation,
                           "ctime": self.ctime_ms}, sort_keys=True).encode()


def _mark_from(ledger_id: int, result: metadata_api.GetResult) -> Mark:
    record = json.loads(result.value)
    return Mark(types.LedgerId(ledger_id),
                frozenset(types.BookieId(b) for b in record.get("missingReplicas", [])),
                int(record.get("ctime", 0)), result.stat.version,
                bool(record.get("placementViolation", False)))


class UnderReplicationStore:
    """Reads and writes the records above; every change that can race is a CAS."""

    def __init__(self, store: metadata_api.MetadataStore) -> None:
        self._store = store

    # ----- marks -----

    async def mark(self, ledger_id: int, bookies: Iterable[types.BookieId], now_ms: int, *,
                   placement_violation: bool = False) -> bool:
        """Add bookies (or a placement violation) to the ledger's mark, creating it; True
        when the record changed."""
        wanted = frozenset(bookies)
        for _ in range(10):
            current = await self.get(ledger_id)
            if current is not None and wanted <= current.missing_replicas and (
                    current.placement_violation or not placement_violation):
                return False
            merged = Mark(types.LedgerId(ledger_id),
                          wanted | (current.missing_replicas if current else frozenset()),
                          current.ctime_ms if current else now_ms,
                          placement_violation=placement_violation or bool(
                              current and current.placement_violation))
            try:
                await self._store.put(self._mark_path(ledger_id), merged.to_json(),
                                      current.version if current else metadata_api.VERSION_ABSENT)
                return True
            except (metadata_errors.BadVersionError, metadata_errors.AlreadyExistsError,
                    metadata_errors.NotFoundError):
                continue
        return False

    async def get(self, ledger_id: int) -> Mark | None:
        result = await self._store.get(self._mark_path(ledger_id))
        return None if result is None else _mark_from(ledger_id, result)

    async def ledger_ids(self) -> list[types.LedgerId]:
        return sorted(types.LedgerId(int(c)) for c in await self._store.get_children(LEDGERS_PATH)
                      if c.isdigit())

    async def marks(self) -> list[Mark]:
        found = []
        for ledger_id in await self.ledger_ids():
            mark = await self.get(ledger_id)
            if mark is not None:
                found.append(mark)
        return found

    async def remove(self, mark: Mark) -> bool:
        """Remove the mark if it is still the version read (False: it was re-marked)."""
        try:
            await self._store.delete(self._mark_path(mark.ledger_id), mark.version)
            return True
        except metadata_errors.NotFoundError:
            return True
        except metadata_errors.BadVersionError:
            return False

    async def remove_unconditionally(self, ledger_id: int) -> None:
        try:
            await self._store.delete(self._mark_path(ledger_id))
        except metadata_errors.NotFoundError:
            pass

    def watch_marks(self) -> metadata_api.Watch:
        return self._store.watch(LEDGERS_PATH, prefix=True)

    # ----- locks -----

    async def try_lock(self, ledger_id: int, owner: str) -> bool:
        """Claim the ledger for this worker (an ephemeral key: a dead worker's claim vanishes)."""
        try:
            await self._store.put(self._lock_path(ledger_id), owner.encode(),
                                  metadata_api.VERSION_ABSENT, ephemeral=True)
            return True
        except metadata_errors.AlreadyExistsError:
            return False

    async def unlock(self, ledger_id: int) -> None:
        try:
            await self._store.delete(self._lock_path(ledger_id))
        except metadata_errors.NotFoundError:
            pass

    async def lock_owner(self, ledger_id: int) -> str | None:
        result = await self._store.get(self._lock_path(ledger_id))
        return None if result is None else result.value.decode()

    # ----- lostBookieRecoveryDelay -----

    async def lost_bookie_recovery_delay_s(self, default_s: int) -> int:
        return (await self.lost_bookie_recovery_delay_record(default_s))[0]

    async def lost_bookie_recovery_delay_record(self, default_s: int) -> tuple[int, int]:
        """(delay in seconds, version of the record; -1 while it was never written)."""
        result = await self._store.get(LOST_BOOKIE_RECOVERY_DELAY_PATH)
        if result is None:
            return default_s, -1
        try:
            return int(result.value.decode()), result.stat.version
        except ValueError:
            return default_s, result.stat.version

    async def set_lost_bookie_recovery_delay_s(self, delay_s: int) -> None:
        await self._store.put(LOST_BOOKIE_RECOVERY_DELAY_PATH, str(delay_s).encode())

    def watch_lost_bookie_recovery_delay(self) -> metadata_api.Watch:
        return self._store.watch(LOST_BOOKIE_RECOVERY_DELAY_PATH)

    # ----- decommissioning -----

    async def start_decommission(self, bookie_id: types.BookieId, now_ms: int) -> None:
        await self._store.put(f"{DECOMMISSIONING_PATH}/{bookie_id}",
                              json.dumps({"ctime": now_ms}).encode())

    async def end_decommission(self, bookie_id: types.BookieId) -> None:
        try:
            await self._store.delete(f"{DECOMMISSIONING_PATH}/{bookie_id}")
        except metadata_errors.NotFoundError:
            pass

    async def decommissioning(self) -> frozenset[types.BookieId]:
        return frozenset(types.BookieId(c)
                         for c in await self._store.get_children(DECOMMISSIONING_PATH))

    async def is_decommissioning(self, bookie_id: types.BookieId) -> bool:
        return await self._store.exists(f"{DECOMMISSIONING_PATH}/{bookie_id}")

    @staticmethod
    def _mark_path(ledger_id: int) -> str:
        return f"{LEDGERS_PATH}/{ledger_id}"

    @staticmethod
    def _lock_path(ledger_id: int) -> str:
        return f"{LOCKS_PATH}/{ledger_id}"
