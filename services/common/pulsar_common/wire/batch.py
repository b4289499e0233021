"""Reading the single messages out of an entry, batched or not.

A batch payload is a run of ``size | SingleMessageMetadata | bytes`` records,
compressed as a whole; the entry's MessageMetadata says how many there are
and how the run is compressed. Spark and Key_Shared key extraction read
messages this way; the broker's data path does not.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from google.protobuf import message as _message

from pulsar_common.wire import compression, entry, errors, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

_U32 = struct.Struct(">I")

# Fields a single message shares with the MessageMetadata of a non-batched entry.
_SHARED_FIELDS = (
    "partition_key",
    "event_time",
    "partition_key_b64_encoded",
    "ordering_key",
    "null_value",
    "null_partition_key",
)


@dataclass(frozen=True, slots=True)
class SingleMessage:
    """One message of an entry: its own metadata and its payload bytes.

    ``batch_index`` is -1 for an entry that is not a batch; its metadata is
    then derived from the entry's MessageMetadata (properties, keys, event
    time, sequence id) so callers handle both cases alike.
    """

    batch_index: int
    metadata: pb.SingleMessageMetadata
    payload: bytes


def unpack_batch(payload: frame.Buffer, count: int) -> list[SingleMessage]:
    """Split an uncompressed batch payload into its ``count`` messages."""
    view = memoryview(payload).cast("B")
    messages: list[SingleMessage] = []
    pos = 0
    for index in range(count):
        if len(view) - pos < 4:
            raise errors.BatchFormatError(f"batch ends before message {index} of {count}")
        meta_size = _U32.unpack_from(view, pos)[0]
        meta_end = pos + 4 + meta_size
        if meta_end > len(view):
            raise errors.BatchFormatError(f"metadata of message {index} runs past the batch")
        metadata = _parse_single_metadata(view[pos + 4 : meta_end], index)
        end = meta_end + metadata.payload_size
        if metadata.payload_size < 0 or end > len(view):
            raise errors.BatchFormatError(f"payload of message {index} runs past the batch")
        messages.append(SingleMessage(index, metadata, bytes(view[meta_end:end])))
        pos = end
    return messages


def read_messages(stored: frame.Buffer) -> tuple[pb.MessageMetadata, list[SingleMessage]]:
    """The entry's MessageMetadata and every message in it, decompressed.

    Raises ``EncryptedPayloadError`` for encrypted entries, and the
    compression errors when the payload's codec is missing or the data is bad.
    """
    metadata = entry.parse_entry_metadata(stored)
    if len(metadata.encryption_keys) > 0:
        raise errors.EncryptedPayloadError("payload is encrypted for its consumers")
    raw = entry.entry_payload(stored)
    payload = compression.decompress(metadata.compression, raw, metadata.uncompressed_size)
    if entry.is_batch(metadata):
        return metadata, unpack_batch(payload, metadata.num_messages_in_batch)
    return metadata, [SingleMessage(-1, _as_single_metadata(metadata, len(payload)), payload)]


def _parse_single_metadata(data: memoryview, index: int) -> pb.SingleMessageMetadata:
    metadata = pb.SingleMessageMetadata()
    try:
        metadata.ParseFromString(data)
    except _message.DecodeError as exc:
        raise errors.BatchFormatError(f"unparsable metadata of message {index}: {exc}") from exc
    if not metadata.IsInitialized():
        raise errors.BatchFormatError(f"metadata of message {index} has no payload size")
    return metadata


def _as_single_metadata(metadata: pb.MessageMetadata, size: int) -> pb.SingleMessageMetadata:
    single = pb.SingleMessageMetadata(payload_size=size, sequence_id=metadata.sequence_id)
    single.properties.extend(metadata.properties)
    for name in _SHARED_FIELDS:
        if metadata.HasField(name):
            setattr(single, name, getattr(metadata, name))
    return single
