"""Which messages a compaction keeps: the latest per key, unless that one deletes the key.

A pure core over the messages of a topic read in log order. Phase one feeds
every message to `LatestByKey`; phase two asks, message by message, whether
it is the one to keep, and `compact_entry` rewrites a stored entry with only
its kept messages. A message is identified by its entry's position and its
index in the batch (-1 for an entry that is not a batch).

Apache's rules: the key is the message's partition key; an empty payload (or
`null_value`) is a tombstone that removes the key; messages without a key are
dropped unless topicCompactionRetainNullKey is set.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import NamedTuple

from google.protobuf import message as _message

from pulsar_common.wire import batch, compression, errors
from pulsar_common.wire import entry as wire_entry
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker.managed_ledger import api as ml

_U32 = struct.Struct(">I")


class MessageRef(NamedTuple):
    """One message: its entry's position and its index in the batch (-1: not a batch)."""

    position: ml.Position
    batch_index: int


@dataclass(frozen=True, slots=True)
class KeyedMessage:
    """What compaction needs to know of one message."""

    ref: MessageRef
    #: The partition key; None when the message has none.
    key: str | None
    tombstone: bool


class LatestByKey:
    """Phase one: the newest message of each key still alive (tombstones remove it)."""

    def __init__(self) -> None:
        self._latest: dict[str, MessageRef] = {}

    def add(self, message: KeyedMessage) -> None:
        if message.key is None:
            return
        if message.tombstone:
            self._latest.pop(message.key, None)
        else:
            self._latest[message.key] = message.ref

    def add_entry(self, position: ml.Position, data: bytes) -> int | None:
        """Phase one's fast path for a whole entry: its messages' keys go in without
        building a message object each (nor copying payloads). Returns how many
        messages it held, or None when it cannot be read inside (an encrypted batch, or
        an entry no client could read): the caller decides with open_entry."""
        try:
            metadata = wire_entry.parse_entry_metadata(data)
            if len(metadata.encryption_keys) > 0:
                return None
            raw = wire_entry.entry_payload(data)
            if not wire_entry.is_batch(metadata):
                key = metadata.partition_key if metadata.HasField("partition_key") else None
                self.add(KeyedMessage(MessageRef(position, -1), key,
                                      metadata.null_value or len(raw) == 0))
                return 1
            payload = memoryview(compression.decompress(
                metadata.compression, raw, metadata.uncompressed_size))
            count = metadata.num_messages_in_batch
            single = pb.SingleMessageMetadata()
            offset = 0
            for index in range(count):
                (size,) = _U32.unpack_from(payload, offset)
                single.ParseFromString(payload[offset + 4:offset + 4 + size])
                offset += 4 + size + single.payload_size
                if offset > len(payload):
                    raise errors.BatchFormatError("a message runs past the batch")
                if not single.HasField("partition_key"):
                    continue
                if single.null_value or single.payload_size == 0:
                    self._latest.pop(single.partition_key, None)
                else:
                    self._latest[single.partition_key] = MessageRef(position, index)
            return count
        except (errors.WireError, struct.error, _message.DecodeError):
            return None

    def positions(self) -> set[ml.Position]:
        """The entries holding a latest message: phase two can skip every other one
        without opening it (unless messages without a key are kept)."""
        return {ref.position for ref in self._latest.values()}

    def keeps(self, message: KeyedMessage, retain_null_key: bool) -> bool:
        if message.key is None:
            return retain_null_key
        return self._latest.get(message.key) == message.ref

    def __len__(self) -> int:
        return len(self._latest)


@dataclass(frozen=True, slots=True)
class ReadEntry:
    """A stored entry opened up: its metadata and messages (None: not readable inside)."""

    position: ml.Position
    data: bytes
    metadata: pb.MessageMetadata
    messages: list[batch.SingleMessage] | None


def open_entry(position: ml.Position, data: bytes) -> ReadEntry:
    """Parse an entry's messages, decompressing a batch. An encrypted batch cannot be
    read inside (messages None); an unreadable entry raises a WireError."""
    metadata = wire_entry.parse_entry_metadata(data)
    if len(metadata.encryption_keys) > 0:
        if wire_entry.is_batch(metadata):
            return ReadEntry(position, data, metadata, None)
        # The key of a single encrypted message is in its clear metadata.
        payload = wire_entry.entry_payload(data)
        single = pb.SingleMessageMetadata(payload_size=len(payload))
        if metadata.HasField("partition_key"):
            single.partition_key = metadata.partition_key
        single.null_value = metadata.null_value
        # Only whether the payload is empty matters (a tombstone), not what it holds.
        return ReadEntry(position, data, metadata,
                         [batch.SingleMessage(-1, single, bytes(payload[:1]))])
    _, messages = batch.read_messages(data)
    return ReadEntry(position, data, metadata, messages)


def keyed_messages(entry: ReadEntry) -> list[KeyedMessage]:
    """The entry's messages as compaction sees them; none for an unreadable batch."""
    if entry.messages is None:
        return []
    return [
        KeyedMessage(
            MessageRef(entry.position, m.batch_index),
            m.metadata.partition_key if m.metadata.HasField("partition_key") else None,
            m.metadata.null_value or len(m.payload) == 0,
        )
        for m in entry.messages
    ]


def compact_entry(entry: ReadEntry, latest: LatestByKey, retain_null_key: bool) -> bytes | None:
    """Phase two: the entry to write to the compacted ledger, or None to drop it.

    An entry whose messages all stay is kept byte for byte. A batch that loses
    some is rewritten with the survivors only, uncompressed (their batch
    indexes are renumbered). An encrypted batch is kept whole: its keys cannot
    be read.
    """
    if entry.messages is None:
        return entry.data
    kept = [m for m, keyed in zip(entry.messages, keyed_messages(entry), strict=True)
            if latest.keeps(keyed, retain_null_key)]
    if not kept:
        return None
    if len(kept) == len(entry.messages):
        return entry.data
    return rebatch(entry.metadata, kept)


def rebatch(metadata: pb.MessageMetadata, messages: list[batch.SingleMessage]) -> bytes:
    """An uncompressed batch entry of these messages under a copy of metadata."""
    parts: list[bytes] = []
    for message in messages:
        single = pb.SingleMessageMetadata()
        single.CopyFrom(message.metadata)
        single.payload_size = len(message.payload)
        encoded = single.SerializeToString()
        parts += [_U32.pack(len(encoded)), encoded, message.payload]
    payload = b"".join(parts)
    outer = pb.MessageMetadata()
    outer.CopyFrom(metadata)
    outer.num_messages_in_batch = len(messages)
    outer.compression = pb.NONE
    outer.uncompressed_size = len(payload)
    encoded_outer = outer.SerializeToString()
    return b"".join((_U32.pack(len(encoded_outer)), encoded_outer, payload))


def readable(position: ml.Position, data: bytes) -> ReadEntry | None:
    """open_entry, or None for an entry no client could read (it is dropped)."""
    try:
        return open_entry(position, data)
    except errors.WireError:
        return None
