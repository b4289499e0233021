"""Where a managed ledger keeps its state in the metadata store, and in which shape.

/managed-ledgers/<name> holds the ledger list (id, entries, size, timestamp),
the terminated position and properties; each durable cursor is a child
/managed-ledgers/<name>/<url-encoded cursor name> holding its mark-delete
position, individually deleted ranges, properties and the batch-index acks of
partly acknowledged batches. Both are JSON and are
written by compare-and-set only: a lost CAS means another broker took over.
"""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pulsar_common.metadata import api as metadata_api
from pulsar_common.metadata import errors as metadata_errors

from pulsar_broker.managed_ledger import api, errors

ROOT_PATH = "/managed-ledgers"


def ledger_path(name: str) -> str:
    if not name or name.startswith("/") or name.endswith("/") or "//" in name:
        raise ValueError(f"bad managed ledger name {name!r}")
    return f"{ROOT_PATH}/{name}"


def cursor_path(name: str, cursor_name: str) -> str:
    return f"{ledger_path(name)}/{urllib.parse.quote(cursor_name, safe='')}"


@dataclass(frozen=True)
class ManagedLedgerInfo:
    ledgers: tuple[api.LedgerInfo, ...] = ()
    terminated_position: api.Position | None = None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CursorInfo:
    mark_delete_position: api.Position
    individually_deleted_ranges: tuple[tuple[api.Position, api.Position], ...] = ()
    properties: dict[str, int] = field(default_factory=dict)
    last_active_ms: int = 0
    #: Partly acknowledged batches: (position, words of a bit set whose set bits are the
    #: messages still unacknowledged), as Apache's batchedEntryDeletionIndexInfo.
    batch_deleted_indexes: tuple[tuple[api.Position, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class Versioned:
    """A record and the store version it was read or written at (for the next CAS)."""

    value: Any
    version: int


def _position(record: dict[str, Any]) -> api.Position:
    return api.Position(int(record["ledgerId"]), int(record["entryId"]))


def _position_json(position: api.Position) -> dict[str, int]:
    return {"ledgerId": position.ledger_id, "entryId": position.entry_id}


def encode_ledger_info(info: ManagedLedgerInfo) -> bytes:
    record: dict[str, Any] = {
        "ledgerInfo": [
            {"ledgerId": i.ledger_id, "entries": i.entries, "size": i.size,
             "timestamp": i.timestamp_ms}
            for i in info.ledgers
        ],
        "properties": dict(info.properties),
    }
    if info.terminated_position is not None:
        record["terminatedPosition"] = _position_json(info.terminated_position)
    return json.dumps(record, sort_keys=True).encode()


def decode_ledger_info(data: bytes) -> ManagedLedgerInfo:
    record = json.loads(data)
    terminated = record.get("terminatedPosition")
    return ManagedLedgerInfo(
        ledgers=tuple(
            api.LedgerInfo(int(i["ledgerId"]), int(i["entries"]), int(i["size"]),
                           int(i["timestamp"]))
            for i in record.get("ledgerInfo", [])
        ),
        terminated_position=None if terminated is None else _position(terminated),
        properties={str(k): str(v) for k, v in record.get("properties", {}).items()},
    )


def encode_cursor_info(info: CursorInfo) -> bytes:
    record = {
        "markDeletePosition": _position_json(info.mark_delete_position),
        "individualDeletedMessages": [
            {"lowerEndpoint": _position_json(lower), "upperEndpoint": _position_json(upper)}
            for lower, upper in info.individually_deleted_ranges
        ],
        "properties": dict(info.properties),
        "lastActive": info.last_active_ms,
    }
    if info.batch_deleted_indexes:
        record["batchedEntryDeletionIndexInfo"] = [
            {"position": _position_json(position), "deleteSet": list(words)}
            for position, words in info.batch_deleted_indexes
        ]
    return json.dumps(record, sort_keys=True).encode()


def decode_cursor_info(data: bytes) -> CursorInfo:
    record = json.loads(data)
    return CursorInfo(
        mark_delete_position=_position(record["markDeletePosition"]),
        individually_deleted_ranges=tuple(
            (_position(r["lowerEndpoint"]), _position(r["upperEndpoint"]))
            for r in record.get("individualDeletedMessages", [])
        ),
        properties={str(k): int(v) for k, v in record.get("properties", {}).items()},
        last_active_ms=int(record.get("lastActive", 0)),
        batch_deleted_indexes=tuple(
            (_position(b["position"]), tuple(int(w) for w in b["deleteSet"]))
            for b in record.get("batchedEntryDeletionIndexInfo", [])
        ),
    )


@contextlib.contextmanager
def _store_errors(path: str) -> Iterator[None]:
    """Metadata-store failures other than a lost CAS, as managed-ledger errors."""
    try:
        yield
    except (metadata_errors.BadVersionError, metadata_errors.NotFoundError) as exc:
        raise errors.MetadataVersionError(f"{path} was changed by someone else") from exc
    except metadata_errors.MetadataStoreError as exc:
        error = errors.ManagedLedgerError(f"metadata store failed on {path}: {exc}")
        error.retriable = exc.retriable
        raise error from exc


class ManagedLedgerMetadata:
    """CAS reads and writes of one managed ledger's records."""

    def __init__(self, store: metadata_api.MetadataStore, name: str):
        self._store = store
        self.name = name
        self.path = ledger_path(name)

    async def read_info(self) -> Versioned | None:
        with _store_errors(self.path):
            result = await self._store.get(self.path)
        if result is None:
            return None
        return Versioned(decode_ledger_info(result.value), result.stat.version)

    async def write_info(self, info: ManagedLedgerInfo, expected_version: int) -> int:
        """Write the ledger list; VERSION_ABSENT creates. Returns the new version."""
        return await self._put(self.path, encode_ledger_info(info), expected_version)

    async def cursor_names(self) -> list[str]:
        with _store_errors(self.path):
            children = await self._store.get_children(self.path)
        return [urllib.parse.unquote(c) for c in children]

    async def read_cursor(self, cursor_name: str) -> Versioned | None:
        path = cursor_path(self.name, cursor_name)
        with _store_errors(path):
            result = await self._store.get(path)
        if result is None:
            return None
        return Versioned(decode_cursor_info(result.value), result.stat.version)

    async def write_cursor(
        self, cursor_name: str, info: CursorInfo, expected_version: int
    ) -> int:
        path = cursor_path(self.name, cursor_name)
        return await self._put(path, encode_cursor_info(info), expected_version)

    async def delete_cursor(self, cursor_name: str) -> None:
        path = cursor_path(self.name, cursor_name)
        with contextlib.suppress(errors.MetadataVersionError), _store_errors(path):
            await self._store.delete(path)

    async def delete_all(self) -> None:
        with _store_errors(self.path):
            await self._store.delete_recursive(self.path)

    async def _put(self, path: str, value: bytes, expected_version: int) -> int:
        with _store_errors(path):
            stat = await self._store.put(path, value, expected_version)
        return stat.version
