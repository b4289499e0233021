"""ReplicatedLedgerClient: the LedgerClient of clusters (pulsar_bookie.client.api contract)."""

from __future__ import annotations

import random
from collections.abc import Mapping

from pulsar_common import clock
from pulsar_common.metadata import api as metadata_api

from pulsar_bookie import errors, types
from pulsar_bookie.client import api, bookie_rpc, ledger_metadata
from pulsar_bookie.client.replicated import placement
from pulsar_bookie.client.replicated import recovery as ledger_recovery
from pulsar_bookie.client.replicated.reader import ReplicatedReadHandle
from pulsar_bookie.client.replicated.settings import ClientSettings
from pulsar_bookie.client.replicated.writer import ReplicatedWriteHandle


class ReplicatedLedgerClient:
    """Ledgers over the bookies that `source` lists, reached through `pool`.

    Deleting a ledger removes its metadata; bookies reclaim the data of ledgers
    whose metadata is gone in their garbage collection, as BookKeeper's do.
    """

    def __init__(
        self,
        store: metadata_api.MetadataStore,
        pool: bookie_rpc.BookieRpcPool,
        source: placement.BookieSource,
        settings: ClientSettings | None = None,
        *,
        rng: random.Random | None = None,
        now_ms: clock.NowMs = clock.wall_clock_ms,
    ) -> None:
        self._meta = ledger_metadata.LedgerMetadataStore(store)
        self._pool = pool
        self._source = source
        self._settings = settings or ClientSettings()
        self._rng = rng or random.Random()
        self._now_ms = now_ms
        self._closed = False

    async def create_ledger(
        self,
        ensemble_size: int,
        write_quorum_size: int,
        ack_quorum_size: int,
        custom_metadata: Mapping[str, str] | None = None,
        password: bytes = b"",
    ) -> ReplicatedWriteHandle:
        self._check_open()
        if not 1 <= ack_quorum_size <= write_quorum_size <= ensemble_size:
            raise errors.BookieError(
                f"invalid quorums E={ensemble_size} WQ={write_quorum_size} AQ={ack_quorum_size}")
        ensemble = placement.choose_ensemble(await self._source.bookies(), ensemble_size,
                                             self._rng)
        metadata = ledger_metadata.new_open_ledger(
            await self._meta.new_ledger_id(),
            (ensemble_size, write_quorum_size, ack_quorum_size), tuple(ensemble),
            self._now_ms(), custom_metadata, password)
        versioned = await self._meta.create(metadata)
        return ReplicatedWriteHandle(versioned, self._meta, self._pool, source=self._source,
                                     settings=self._settings, rng=self._rng)

    async def open_ledger(
        self, ledger_id: types.LedgerId, *, recovery: bool = True, password: bytes = b""
    ) -> ReplicatedReadHandle:
        self._check_open()
        versioned = await self._meta.read(ledger_id)
        if versioned.metadata.password != password:
            raise errors.UnauthorizedAccessError(f"wrong password for ledger {ledger_id}")
        if recovery and not versioned.metadata.is_closed:
            versioned = await ledger_recovery.recover(versioned, self._meta, self._pool,
                                                      self._settings, self._source, self._rng)
        handle = ReplicatedReadHandle(versioned.metadata, self._pool, self._settings,
                                      types.INVALID_ENTRY_ID)
        if not versioned.metadata.is_closed:
            await handle.read_last_add_confirmed()
        return handle

    async def get_ledger_metadata(self, ledger_id: types.LedgerId) -> api.LedgerMetadata:
        return (await self._meta.read(ledger_id)).metadata

    async def delete_ledger(self, ledger_id: types.LedgerId) -> None:
        await self._meta.remove(ledger_id)

    async def close(self) -> None:
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise errors.BookieUnavailableError("the ledger client is closed")


def _implements_contract(client: ReplicatedLedgerClient) -> api.LedgerClient:
    """Never called: mypy checks here that the client satisfies the contract."""
    return client
