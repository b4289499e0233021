"""What the autorecovery admin endpoints do to the cluster (any bookie, or `pulsar autorecovery`).

Decommissioning a bookie, in BookKeeper's order:

1. `start_decommission`: refuse when the other writable bookies cannot form
   the ensembles of the ledgers on it; record it as decommissioning (the
   placement of replicas avoids it, and a restarted bookie stays read-only);
   make it read-only through its own HTTP endpoint if it runs; mark every
   ledger with a fragment on it under-replicated. Workers then drain it.
2. `decommission_status` until `ledgers` is 0 (no ledger metadata refers to
   it) and `underReplicatedLedgers` is 0.
3. Stop the bookie, then `remove_bookie`: its cookie and decommissioning
   record are deleted (BookKeeper's `decommissionbookie`), refused while it is
   registered or while any ledger still refers to it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import aiohttp
from pulsar_common import clock
from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import errors as metadata_errors

from pulsar_bookie import errors, types
from pulsar_bookie.autorecovery import plan, underreplication
from pulsar_bookie.client import api, ledger_metadata
from pulsar_bookie.service import registration

#: Timeout of the call that makes a decommissioned bookie read-only.
READ_ONLY_CALL_TIMEOUT_S = 10.0


class AdminRefusal(errors.BookieError):
    """A request the cluster's state does not allow (HTTP 409 with the reason)."""


class UnknownBookieError(AdminRefusal):
    """A bookie neither registered, nor with a cookie, nor named by any ledger (HTTP 404)."""


@dataclasses.dataclass(frozen=True)
class DecommissionStatus:
    bookie_id: types.BookieId
    decommissioning: bool
    registered: bool
    read_only: bool
    #: Ledgers whose metadata still names the bookie.
    ledgers: int
    #: Under-replicated ledgers whose mark names the bookie.
    under_replicated_ledgers: int

    @property
    def drained(self) -> bool:
        return self.ledgers == 0 and self.under_replicated_ledgers == 0

    def to_json(self) -> dict[str, Any]:
        return {"bookie": self.bookie_id, "decommissioning": self.decommissioning,
                "registered": self.registered, "readOnly": self.read_only,
                "ledgers": self.ledgers, "underReplicatedLedgers": self.under_replicated_ledgers,
                "drained": self.drained}


class AutoRecoveryAdmin:
    def __init__(self, store: metadata_api.MetadataStore, default_delay_s: int, *,
                 now_ms: clock.NowMs = clock.wall_clock_ms) -> None:
        self._store = store
        self._now_ms = now_ms
        self._marks = underreplication.UnderReplicationStore(store)
        self._meta = ledger_metadata.LedgerMetadataStore(store)
        self._default_delay_s = default_delay_s

    async def list_bookies(self, kind: str) -> dict[str, str]:
        """BookKeeper's list_bookies: {bookie id: host} of rw, ro or all registered bookies."""
        found = await registration.list_bookies(self._store)
        if kind == "rw":
            found = [b for b in found if b.writable]
        elif kind == "ro":
            found = [b for b in found if not b.writable]
        return {b.bookie_id: b.address.rsplit(":", 1)[0] for b in found}

    async def who_is_auditor(self) -> dict[str, Any] | None:
        result = await self._store.get(underreplication.AUDITOR_ELECTION_PATH)
        if result is None:
            return None
        record = json.loads(result.value)
        return {"Auditor": record.get("bookieId", ""),
                "httpAddress": record.get("httpAddress", "")}

    async def under_replicated(self, missing_replica: str | None,
                               excluding_missing_replica: str | None) -> dict[str, list[str]]:
        found = {}
        for mark in await self._marks.marks():
            if missing_replica and missing_replica not in mark.missing_replicas:
                continue
            if excluding_missing_replica and excluding_missing_replica in mark.missing_replicas:
                continue
            found[str(mark.ledger_id)] = [str(b) for b in sorted(mark.missing_replicas)]
        return found

    async def lost_bookie_recovery_delay_s(self) -> int:
        return await self._marks.lost_bookie_recovery_delay_s(self._default_delay_s)

    async def set_lost_bookie_recovery_delay_s(self, delay_s: int) -> None:
        if delay_s < 0:
            raise AdminRefusal("delay_seconds must be >= 0")
        await self._marks.set_lost_bookie_recovery_delay_s(delay_s)

    async def trigger_audit(self) -> None:
        """Rewriting the delay with its own value makes the auditor audit at once."""
        await self._marks.set_lost_bookie_recovery_delay_s(
            await self.lost_bookie_recovery_delay_s())

    # ----- decommission -----

    async def _ledgers_on(self, bookie_id: types.BookieId) -> list[api.LedgerMetadata]:
        found = []
        for ledger_id in await self._meta.ledger_ids():
            try:
                metadata = (await self._meta.read(ledger_id)).metadata
            except errors.NoSuchLedgerError:
                continue
            if bookie_id in plan.bookies_of(metadata):
                found.append(metadata)
        return found

    async def start_decommission(self, bookie_id: types.BookieId) -> DecommissionStatus:
        bookies = await registration.list_bookies(self._store)
        draining = await self._marks.decommissioning()
        ledgers = await self._ledgers_on(bookie_id)
        known = (any(b.bookie_id == bookie_id for b in bookies) or ledgers
                 or await self._store.exists(registration.cookie_path(bookie_id)))
        if not known:
            raise UnknownBookieError(f"no bookie {bookie_id} in this cluster")
        others = [b for b in bookies
                  if b.writable and b.bookie_id != bookie_id and b.bookie_id not in draining]
        needed = max((m.ensemble_size for m in ledgers), default=0)
        if len(others) < needed:
            raise AdminRefusal(
                f"cannot decommission {bookie_id}: its ledgers need ensembles of {needed} "
                f"bookies and only {len(others)} other writable bookies remain")
        await self._marks.start_decommission(bookie_id, self._now_ms())
        target = next((b for b in bookies if b.bookie_id == bookie_id), None)
        if target is not None and target.writable and target.http_address:
            await _set_read_only(target.http_address)
        for metadata in ledgers:
            await self._marks.mark(metadata.ledger_id, [bookie_id], self._now_ms())
        return await self.decommission_status(bookie_id)

    async def decommission_status(self, bookie_id: types.BookieId) -> DecommissionStatus:
        bookies = {b.bookie_id: b for b in await registration.list_bookies(self._store)}
        info = bookies.get(bookie_id)
        marks = await self._marks.marks()
        return DecommissionStatus(
            bookie_id=bookie_id,
            decommissioning=await self._marks.is_decommissioning(bookie_id),
            registered=info is not None,
            read_only=info is not None and not info.writable,
            ledgers=len(await self._ledgers_on(bookie_id)),
            under_replicated_ledgers=sum(1 for m in marks if bookie_id in m.missing_replicas),
        )

    async def remove_bookie(self, bookie_id: types.BookieId) -> None:
        """Delete the cookie and decommissioning record of a stopped, drained bookie."""
        status = await self.decommission_status(bookie_id)
        if status.registered:
            raise AdminRefusal(f"bookie {bookie_id} is still registered: stop it first")
        if status.ledgers:
            raise AdminRefusal(
                f"{status.ledgers} ledgers still have fragments on {bookie_id}: drain it first")
        try:
            await self._store.delete(registration.cookie_path(bookie_id))
        except metadata_errors.NotFoundError:
            pass
        await self._marks.end_decommission(bookie_id)


async def _set_read_only(http_address: str) -> None:
    timeout = aiohttp.ClientTimeout(total=READ_ONLY_CALL_TIMEOUT_S)
    try:
        async with aiohttp.ClientSession(timeout=timeout) as session, session.put(
                f"{http_address}/api/v1/bookie/state/readonly",
                json={"readOnly": True}) as response:
            if response.status != 200:
                raise AdminRefusal(
                    f"{http_address} refused read-only mode: HTTP {response.status}")
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise errors.BookieUnavailableError(
            f"could not make {http_address} read-only: {exc}") from exc
