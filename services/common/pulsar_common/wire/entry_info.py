"""What the broker reads from a stored entry: only the few metadata fields it needs.

The entry bytes are `metadataSize | MessageMetadata | payload` exactly as the
producer sent them. Parsing the metadata (never the payload) gives the batch
size for permits, the sticky key for Key_Shared and the publish time for seeks.
An entry whose metadata is unreadable raises (see pulsar_common.wire.validation).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass

from pulsar_common.wire import errors as wire_errors
from pulsar_common.wire import pulsar_api_pb2 as pb
from pulsar_common.wire import validation

_SIZE = struct.Struct(">I")
NONE_KEY = b"NONE_KEY"


@dataclass(frozen=True, slots=True)
class EntryInfo:
    num_messages: int
    sticky_key: bytes
    publish_time_ms: int
    deliver_at_time_ms: int
    sequence_id: int


def parse_metadata(data: bytes | memoryview) -> pb.MessageMetadata:
    (size,) = _SIZE.unpack_from(data, 0)
    metadata = pb.MessageMetadata()
    metadata.ParseFromString(bytes(data[4 : 4 + size]))
    return metadata


def entry_info(data: bytes | memoryview) -> EntryInfo:
    """What dispatch needs from an entry; raises a wire MetadataParseError or
    BatchFormatError for an entry no client could read (see wire.validation)."""
    metadata = validation.check_metadata(data)
    if metadata.HasField("ordering_key"):
        key = metadata.ordering_key
    elif metadata.HasField("partition_key"):
        key = metadata.partition_key.encode()
    else:
        key = NONE_KEY
    return EntryInfo(
        num_messages=metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 1,
        sticky_key=key,
        publish_time_ms=metadata.publish_time,
        deliver_at_time_ms=metadata.deliver_at_time if metadata.HasField("deliver_at_time") else 0,
        sequence_id=metadata.sequence_id,
    )


def published_before(timestamp_ms: int) -> Callable[[bytes | memoryview], bool]:
    """Whether an entry was published before timestamp_ms (seek and reset by time). An
    unreadable entry counts as published before, so a seek moves past it."""

    def test(data: bytes | memoryview) -> bool:
        try:
            return entry_info(data).publish_time_ms < timestamp_ms
        except wire_errors.WireError:
            return True

    return test
