"""Cheap checks that an entry is something every official client can read.

A broker stores what producers send without decoding payloads, but some
entries it can tell are broken, and storing them harms others: metadata that
is not a valid `MessageMetadata` makes the C++ client drop its connection on
every delivery, and a batch that announces more messages than its payload
holds makes it read past its buffer (SIGSEGV). Two levels:

* `check_entry` (on SEND): the metadata parses with its required fields, and
  a batch's count is possible. Uncompressed, unencrypted batches are walked
  record by record (`size | SingleMessageMetadata | payload`, each record
  parsed only for its payload size); compressed ones are bounded by their
  `uncompressed_size`, encrypted ones by their payload size. Nothing is
  decompressed.
* `check_metadata` (on dispatch, for entries stored before these checks):
  the same without the walk, O(1) past the metadata parse.

Both raise `MetadataParseError` or `BatchFormatError` with the reason.
"""

from __future__ import annotations

import struct

from google.protobuf import message as _message

from pulsar_common.wire import entry as wire_entry
from pulsar_common.wire import errors, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

#: The smallest record of a batch: a 4-byte size and a SingleMessageMetadata holding only
#: its required payload_size (one tag byte, one varint byte).
SINGLE_MESSAGE_BYTES_MIN = 6

_U32 = struct.Struct(">I")


def check_entry(entry: frame.Buffer) -> pb.MessageMetadata:
    """The entry's metadata, after checking that clients can read the entry; raises
    MetadataParseError or BatchFormatError otherwise."""
    metadata = check_metadata(entry)
    if wire_entry.is_batch(metadata) and _walkable(metadata):
        _walk_batch(wire_entry.entry_payload(entry), metadata.num_messages_in_batch)
    return metadata


def check_metadata(entry: frame.Buffer) -> pb.MessageMetadata:
    """The entry's metadata, checked without reading the payload: it parses, has its
    required fields, and a batch's count fits the bytes it can occupy."""
    metadata = wire_entry.parse_entry_metadata(entry)
    if wire_entry.is_batch(metadata):
        count = metadata.num_messages_in_batch
        room = _batch_bytes(metadata, len(wire_entry.entry_payload(entry)))
        if count <= 0 or count > room // SINGLE_MESSAGE_BYTES_MIN:
            raise errors.BatchFormatError(
                f"a batch of {count} messages cannot fit in {room} bytes")
    return metadata


def _walkable(metadata: pb.MessageMetadata) -> bool:
    """Whether the payload on the wire is the batch itself (not compressed, not encrypted)."""
    return metadata.compression == pb.NONE and len(metadata.encryption_keys) == 0


def _batch_bytes(metadata: pb.MessageMetadata, payload_size: int) -> int:
    """How many bytes the batch's records occupy once the payload is readable."""
    if metadata.compression != pb.NONE:
        return metadata.uncompressed_size
    return payload_size


def _walk_batch(payload: memoryview, count: int) -> None:
    """Follow count records through payload; every one must lie within it."""
    single = pb.SingleMessageMetadata()
    size = len(payload)
    position = 0
    for index in range(count):
        if size - position < 4:
            raise errors.BatchFormatError(f"batch ends before message {index} of {count}")
        (metadata_size,) = _U32.unpack_from(payload, position)
        metadata_end = position + 4 + metadata_size
        if metadata_end > size:
            raise errors.BatchFormatError(f"metadata of message {index} runs past the batch")
        single.Clear()
        try:
            single.ParseFromString(payload[position + 4 : metadata_end])
        except _message.DecodeError as exc:
            raise errors.BatchFormatError(f"unparsable metadata of message {index}") from exc
        if not single.HasField("payload_size") or single.payload_size < 0:
            raise errors.BatchFormatError(f"message {index} has no payload size")
        position = metadata_end + single.payload_size
        if position > size:
            raise errors.BatchFormatError(f"payload of message {index} runs past the batch")
