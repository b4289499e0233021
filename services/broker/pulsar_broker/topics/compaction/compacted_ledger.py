"""The compacted ledger: its entry format and a view that reads it by original position.

Each entry of a compacted ledger is one entry of the topic as compaction left
it, with the position it had in the topic, laid out as Apache's RawMessage is
serialized: `idSize | MessageIdData | size | entry bytes`. Entries are in
topic order, so the view finds where a reader stands by binary search over
the original positions (kept in memory: one position per surviving entry).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from pulsar_bookie import types
from pulsar_bookie.client import api as client_api
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker.managed_ledger import api as ml

_U32 = struct.Struct(">I")
#: Entries read from the compacted ledger per request while loading a view.
LOAD_CHUNK_ENTRIES = 1000
#: custom_metadata tag of compacted ledgers: the topic they belong to.
COMPACTED_TOPIC_TAG = "pulsar/compacted-topic"


class CompactedLedgerFormatError(Exception):
    """An entry of a compacted ledger that is not `idSize | id | size | data`."""


def encode_entry(position: ml.Position, data: bytes) -> bytes:
    message_id = pb.MessageIdData(ledgerId=position.ledger_id, entryId=position.entry_id)
    encoded = message_id.SerializeToString()
    return b"".join((_U32.pack(len(encoded)), encoded, _U32.pack(len(data)), data))


def decode_entry(raw: bytes) -> ml.Entry:
    try:
        (id_size,) = _U32.unpack_from(raw, 0)
        message_id = pb.MessageIdData()
        message_id.ParseFromString(raw[4:4 + id_size])
        (size,) = _U32.unpack_from(raw, 4 + id_size)
    except Exception as exc:  # struct and protobuf errors alike
        raise CompactedLedgerFormatError(f"bad compacted entry: {exc}") from exc
    start = 8 + id_size
    if start + size != len(raw):
        raise CompactedLedgerFormatError(f"compacted entry of {len(raw)} bytes says {size}")
    return ml.Entry(ml.Position(message_id.ledgerId, message_id.entryId), raw[start:])


@dataclass
class CompactedView:
    """One compacted ledger: what a topic looked like, key by key, up to its horizon."""

    ledger_id: int
    #: The last topic position this compaction read; later entries are read from the topic.
    horizon: ml.Position
    #: The original position of each compacted entry, in entry-id order.
    positions: Sequence[ml.Position]
    handle: client_api.ReadHandle

    @classmethod
    async def load(cls, client: client_api.LedgerClient, ledger_id: int,
                   horizon: ml.Position) -> CompactedView:
        handle = await client.open_ledger(types.LedgerId(ledger_id), recovery=False)
        positions: list[ml.Position] = []
        last = handle.last_add_confirmed
        for first in range(0, last + 1, LOAD_CHUNK_ENTRIES):
            for entry in await handle.read(first, min(last, first + LOAD_CHUNK_ENTRIES - 1)):
                positions.append(decode_entry(entry.payload).position)
        return cls(ledger_id, horizon, positions, handle)

    def index_at_or_after(self, position: ml.Position) -> int:
        return bisect.bisect_left(self.positions, position)

    def has_entries_from(self, position: ml.Position) -> bool:
        return self.index_at_or_after(position) < len(self.positions)

    async def read_from(self, position: ml.Position, max_entries: int,
                        max_bytes: int | None = None) -> list[ml.Entry]:
        """Compacted entries at or after position (in topic order), at most max_entries;
        a read stops once it holds max_bytes (at least one entry)."""
        first = self.index_at_or_after(position)
        last = min(len(self.positions), first + max(1, max_entries)) - 1
        if first > last:
            return []
        entries: list[ml.Entry] = []
        size = 0
        for raw in await self.handle.read(first, last):
            entry = decode_entry(raw.payload)
            entries.append(entry)
            size += len(entry.data)
            if max_bytes is not None and size >= max_bytes:
                break
        return entries

    async def chunks(self, chunk: int = LOAD_CHUNK_ENTRIES) -> AsyncIterator[list[ml.Entry]]:
        """Every compacted entry, chunk by chunk (compaction merges them with what came
        after the horizon)."""
        for first in range(0, len(self.positions), chunk):
            raws = await self.handle.read(first, min(len(self.positions), first + chunk) - 1)
            yield [decode_entry(raw.payload) for raw in raws]

    async def close(self) -> None:
        await self.handle.close()
