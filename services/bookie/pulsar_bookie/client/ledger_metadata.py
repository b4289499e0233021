"""Ledger metadata in the metadata store: JSON records under /ledgers/<id>, changed by CAS only.

Shared by every ledger client (the in-process one of `pulsar standalone` and
the replicated one). A ledger's metadata says who may hold its entries
(fragments and their ensembles), its quorums, and whether it is closed and at
which entry. Two parties may change it at once (a writer closing, a reader
recovering, autorecovery replacing a bookie), so every update names the
version it read; the loser gets MetadataVersionError and must re-read.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import errors as metadata_errors

from pulsar_bookie import errors, types
from pulsar_bookie.client import api

#: Parent of every ledger's metadata record; children are decimal ledger ids.
LEDGERS_PATH = "/ledgers"
#: Counter handing out ledger ids (kept outside LEDGERS_PATH so its children are only ledgers).
LEDGER_ID_COUNTER_PATH = "/ledgers-idgen"
FORMAT_VERSION = 1


def ledger_path(ledger_id: int) -> str:
    return f"{LEDGERS_PATH}/{ledger_id}"


def new_open_ledger(
    ledger_id: types.LedgerId,
    quorums: tuple[int, int, int],
    ensemble: tuple[types.BookieId, ...],
    ctime_ms: int,
    custom_metadata: Mapping[str, str] | None,
    password: bytes,
) -> api.LedgerMetadata:
    """The metadata of a ledger just created: OPEN, empty, one fragment from entry 0.
    quorums is (ensemble size, write quorum, ack quorum)."""
    ensemble_size, write_quorum_size, ack_quorum_size = quorums
    return api.LedgerMetadata(
        ledger_id=ledger_id,
        ensemble_size=ensemble_size,
        write_quorum_size=write_quorum_size,
        ack_quorum_size=ack_quorum_size,
        state=api.LedgerState.OPEN,
        last_entry_id=types.INVALID_ENTRY_ID,
        length=0,
        ensembles=(api.Fragment(types.EntryId(0), ensemble),),
        ctime_ms=ctime_ms,
        custom_metadata=dict(custom_metadata or {}),
        password=password,
    )


def to_json(metadata: api.LedgerMetadata) -> bytes:
    record: dict[str, Any] = {
        "formatVersion": FORMAT_VERSION,
        "ledgerId": metadata.ledger_id,
        "ensembleSize": metadata.ensemble_size,
        "writeQuorumSize": metadata.write_quorum_size,
        "ackQuorumSize": metadata.ack_quorum_size,
        "state": metadata.state.value,
        "lastEntryId": metadata.last_entry_id,
        "length": metadata.length,
        "ensembles": [
            {"firstEntryId": f.first_entry_id, "bookies": list(f.ensemble)}
            for f in metadata.ensembles
        ],
        "ctime": metadata.ctime_ms,
        "customMetadata": dict(metadata.custom_metadata),
        "password": base64.b64encode(metadata.password).decode("ascii"),
    }
    return json.dumps(record, sort_keys=True).encode()


def from_json(data: bytes) -> api.LedgerMetadata:
    try:
        record = json.loads(data)
        return api.LedgerMetadata(
            ledger_id=types.LedgerId(int(record["ledgerId"])),
            ensemble_size=int(record["ensembleSize"]),
            write_quorum_size=int(record["writeQuorumSize"]),
            ack_quorum_size=int(record["ackQuorumSize"]),
            state=api.LedgerState(record["state"]),
            last_entry_id=types.EntryId(int(record["lastEntryId"])),
            length=int(record["length"]),
            ensembles=tuple(
                api.Fragment(
                    first_entry_id=types.EntryId(int(f["firstEntryId"])),
                    ensemble=tuple(types.BookieId(b) for b in f["bookies"]),
                )
                for f in record["ensembles"]
            ),
            ctime_ms=int(record["ctime"]),
            custom_metadata={str(k): str(v) for k, v in record["customMetadata"].items()},
            password=base64.b64decode(record.get("password", "")),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise errors.BookieError(f"unreadable ledger metadata: {exc}") from exc


@dataclass(frozen=True)
class VersionedMetadata:
    metadata: api.LedgerMetadata
    #: Version of the record in the metadata store, for the next compare-and-set.
    version: int


@contextlib.contextmanager
def _store_errors(what: str) -> Iterator[None]:
    """Metadata-store failures (other than those callers handle) as ledger-client errors."""
    try:
        yield
    except (metadata_errors.BadVersionError, metadata_errors.NotFoundError):
        raise
    except metadata_errors.MetadataStoreError as exc:
        error = errors.BookieError(f"metadata store failed on {what}: {exc}")
        error.retriable = exc.retriable
        raise error from exc


class LedgerMetadataStore:
    """Reads and writes ledger metadata records; every write is a compare-and-set."""

    def __init__(self, store: metadata_api.MetadataStore):
        self._store = store

    async def new_ledger_id(self) -> types.LedgerId:
        with _store_errors(LEDGER_ID_COUNTER_PATH):
            return types.LedgerId(await self._store.next_id(LEDGER_ID_COUNTER_PATH))

    async def create(self, metadata: api.LedgerMetadata) -> VersionedMetadata:
        try:
            with _store_errors(ledger_path(metadata.ledger_id)):
                stat = await self._store.put(
                    ledger_path(metadata.ledger_id),
                    to_json(metadata),
                    metadata_api.VERSION_ABSENT,
                )
        except metadata_errors.BadVersionError as exc:
            raise errors.MetadataVersionError(
                f"ledger {metadata.ledger_id} already exists"
            ) from exc
        return VersionedMetadata(metadata, stat.version)

    async def read(self, ledger_id: int) -> VersionedMetadata:
        with _store_errors(ledger_path(ledger_id)):
            result = await self._store.get(ledger_path(ledger_id))
        if result is None:
            raise errors.NoSuchLedgerError(f"ledger {ledger_id} has no metadata")
        return VersionedMetadata(from_json(result.value), result.stat.version)

    async def write(
        self, metadata: api.LedgerMetadata, expected_version: int
    ) -> VersionedMetadata:
        """Replace the record if it still has expected_version (MetadataVersionError if not)."""
        try:
            with _store_errors(ledger_path(metadata.ledger_id)):
                stat = await self._store.put(
                    ledger_path(metadata.ledger_id), to_json(metadata), expected_version
                )
        except metadata_errors.BadVersionError as exc:
            raise errors.MetadataVersionError(
                f"ledger {metadata.ledger_id} metadata changed (expected version "
                f"{expected_version})"
            ) from exc
        except metadata_errors.NotFoundError as exc:
            raise errors.NoSuchLedgerError(f"ledger {metadata.ledger_id} was deleted") from exc
        return VersionedMetadata(metadata, stat.version)

    async def remove(self, ledger_id: int) -> None:
        """Delete the record; one that is already gone is not an error."""
        try:
            with _store_errors(ledger_path(ledger_id)):
                await self._store.delete(ledger_path(ledger_id))
        except metadata_errors.NotFoundError:
            pass

    async def ledger_ids(self) -> list[types.LedgerId]:
        with _store_errors(LEDGERS_PATH):
            children = await self._store.get_children(LEDGERS_PATH)
        return sorted(types.LedgerId(int(c)) for c in children if c.isdigit())
