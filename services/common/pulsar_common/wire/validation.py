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


#: SingleMessageMetadata.payload_size is field 3, a varint: its tag byte.
_PAYLOAD_SIZE_TAG = 0x18


def _walk_batch(payload: memoryview, count: int) -> None:
    """Follow count records through payload; every one must lie within it.

    This runs on every SEND of an uncompressed batch, so each record's
    SingleMessageMetadata is read by hand only as far as its protobuf framing
    and `payload_size` (about 0.15 us a record, a quarter of a full parse):
    what keeps a reader inside the batch is the sizes, which this checks.
    """
    size = len(payload)
    unpack = _U32.unpack_from
    position = 0
    for index in range(count):
        if size - position < 4:
            raise errors.BatchFormatError(f"batch ends before message {index} of {count}")
        (metadata_size,) = unpack(payload, position)
        start = position + 4
        metadata_end = start + metadata_size
        if metadata_end > size:
            raise errors.BatchFormatError(f"metadata of message {index} runs past the batch")
        if payload[start] == _PAYLOAD_SIZE_TAG and payload[start + 1] < 0x80 and (
                metadata_size == 2 or _only_sequence_id_follows(payload, start + 2, metadata_end)):
            # The common records: payload_size (< 128) alone, or followed by the
            # sequence_id the official clients copy into every record of a batch.
            payload_size = payload[start + 1]
        else:
            payload_size = _payload_size(payload, start, metadata_end, index)
        position = metadata_end + payload_size
        if position > size:
            raise errors.BatchFormatError(f"payload of message {index} runs past the batch")


#: SingleMessageMetadata.sequence_id is field 8, a varint: its tag byte.
_SEQUENCE_ID_TAG = 0x40

#: The most bytes a varint of a 64-bit value takes.
_VARINT_BYTES_MAX = 10


def _only_sequence_id_follows(data: memoryview, position: int, end: int) -> bool:
    """Whether data[position:end] is exactly one sequence_id field (tag, then one varint),
    so the payload_size before it is the record's only one."""
    if end - position < 2 or end - position > 1 + _VARINT_BYTES_MAX:
        return False
    if data[position] != _SEQUENCE_ID_TAG or data[end - 1] >= 0x80:
        return False
    position += 1
    last = end - 1
    while position < last:
        if data[position] < 0x80:
            return False
        position += 1
    return True


def _payload_size(data: memoryview, position: int, end: int, index: int) -> int:
    """payload_size of the SingleMessageMetadata in data[position:end], walking its fields."""
    found = -1
    while position < end:
        tag, position = _varint(data, position, end, index)
        wire_type = tag & 7
        if wire_type == 0:
            value, position = _varint(data, position, end, index)
            if tag >> 3 == 3:
                found = value
        elif wire_type == 2:
            length, position = _varint(data, position, end, index)
            position += length
        elif wire_type in (1, 5):
            position += 8 if wire_type == 1 else 4
        else:
            raise errors.BatchFormatError(f"unparsable metadata of message {index}")
    if position != end:
        raise errors.BatchFormatError(f"unparsable metadata of message {index}")
    if found < 0 or found >= 2**31:
        raise errors.BatchFormatError(f"message {index} has no payload size")
    return found


def _varint(data: memoryview, position: int, end: int, index: int) -> tuple[int, int]:
    value = shift = 0
    while position < end and shift < 70:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
    raise errors.BatchFormatError(f"unparsable metadata of message {index}")
