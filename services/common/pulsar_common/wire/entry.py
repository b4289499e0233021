"""Stored entries: what a broker keeps per SEND and replays as MESSAGE frames.

An entry is ``metadataSize | MessageMetadata | payload``, byte for byte as the
producer sent it (the frame's checksum section is not part of it). The broker
reads only the metadata (sequence id, batch size, key, deliver-at time) and
never touches the payload. Dispatch builds a MESSAGE frame around the stored
bytes; its CRC32C covers exactly those bytes, so it can be computed once per
entry and reused for every consumer (or taken from the SEND frame:
``Frame.checksum`` when ``Frame.checksum_valid``).
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterable

from google.protobuf import message as _message

from pulsar_common.wire import errors, frame
from pulsar_common.wire import pulsar_api_pb2 as pb

_U32 = struct.Struct(">I")
_UINT64_MASK = (1 << 64) - 1


def split_entry(entry: frame.Buffer) -> tuple[memoryview, memoryview]:
    """(metadata bytes, payload bytes) of an entry, without copying."""
    view = memoryview(entry).cast("B")
    if len(view) < 4:
        raise errors.MetadataParseError(f"entry of {len(view)} bytes has no metadata size")
    size = _U32.unpack_from(view, 0)[0]
    if 4 + size > len(view):
        raise errors.MetadataParseError(
            f"metadata size {size} exceeds the entry's {len(view) - 4} bytes"
        )
    return view[4 : 4 + size], view[4 + size :]


def parse_entry_metadata(entry: frame.Buffer) -> pb.MessageMetadata:
    """The MessageMetadata of an entry; the payload is not read."""
    raw, _ = split_entry(entry)
    metadata = pb.MessageMetadata()
    try:
        metadata.ParseFromString(raw)
    except _message.DecodeError as exc:
        raise errors.MetadataParseError(f"unparsable MessageMetadata: {exc}") from exc
    if not metadata.IsInitialized():
        missing = ", ".join(metadata.FindInitializationErrors())
        raise errors.MetadataParseError(f"MessageMetadata misses required fields: {missing}")
    return metadata


def entry_payload(entry: frame.Buffer) -> memoryview:
    """The payload of an entry (possibly compressed, possibly a batch)."""
    return split_entry(entry)[1]


def is_batch(metadata: pb.MessageMetadata) -> bool:
    """Batches carry num_messages_in_batch; single messages leave it out."""
    return bool(metadata.HasField("num_messages_in_batch"))


def message_count(metadata: pb.MessageMetadata) -> int:
    """Messages in the entry: flow permits it uses, receipts it stands for."""
    return metadata.num_messages_in_batch if is_batch(metadata) else 1


def sticky_key(metadata: pb.MessageMetadata) -> bytes | None:
    """The key Key_Shared dispatch hashes: ordering key, else partition key, else None.

    Clients batch by key for Key_Shared, so the outer metadata of a batch
    carries the key of all its messages.
    """
    if metadata.HasField("ordering_key"):
        return metadata.ordering_key
    if metadata.HasField("partition_key"):
        if metadata.partition_key_b64_encoded:
            try:
                return base64.b64decode(metadata.partition_key, validate=True)
            except binascii.Error:
                return metadata.partition_key.encode()
        return metadata.partition_key.encode()
    return None


def fill_message_id(
    target: pb.MessageIdData,
    ledger_id: int,
    entry_id: int,
    *,
    partition: int = -1,
    batch_index: int = -1,
    batch_size: int | None = None,
    ack_set: Iterable[int] | None = None,
) -> pb.MessageIdData:
    """Set a MessageIdData in place (cheaper than building one and copying it in).

    Negative ledger/entry ids (-1 = earliest) wrap to uint64; partition and
    batch index are left unset at their default -1.
    """
    target.ledgerId = ledger_id & _UINT64_MASK
    target.entryId = entry_id & _UINT64_MASK
    if partition != -1:
        target.partition = partition
    if batch_index != -1:
        target.batch_index = batch_index
    if batch_size is not None:
        target.batch_size = batch_size
    if ack_set:
        target.ack_set.extend(ack_set)
    return target


def message_id(
    ledger_id: int,
    entry_id: int,
    *,
    partition: int = -1,
    batch_index: int = -1,
    batch_size: int | None = None,
    ack_set: Iterable[int] | None = None,
) -> pb.MessageIdData:
    """A new MessageIdData (see ``fill_message_id``)."""
    return fill_message_id(
        pb.MessageIdData(),
        ledger_id,
        entry_id,
        partition=partition,
        batch_index=batch_index,
        batch_size=batch_size,
        ack_set=ack_set,
    )


def message_command(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    *,
    partition: int = -1,
    redelivery_count: int = 0,
    ack_set: Iterable[int] | None = None,
    consumer_epoch: int | None = None,
) -> pb.BaseCommand:
    """The MESSAGE command that goes in front of an entry."""
    command = pb.BaseCommand(type=pb.BaseCommand.MESSAGE)
    body = command.message
    body.consumer_id = consumer_id
    fill_message_id(body.message_id, ledger_id, entry_id, partition=partition)
    if redelivery_count:
        body.redelivery_count = redelivery_count
    if ack_set:
        body.ack_set.extend(ack_set)
    if consumer_epoch is not None:
        body.consumer_epoch = consumer_epoch
    return command


def message_frame_parts(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    entry: frame.Buffer,
    *,
    entry_checksum: int | None = None,
    with_checksum: bool = True,
    partition: int = -1,
    redelivery_count: int = 0,
    ack_set: Iterable[int] | None = None,
    consumer_epoch: int | None = None,
    broker_entry_metadata: pb.BrokerEntryMetadata | bytes | None = None,
) -> tuple[bytes, frame.Buffer]:
    """A MESSAGE frame for a stored entry as (header, entry) for writelines.

    ``with_checksum`` must be False for clients that announced a protocol
    version below 6; ``broker_entry_metadata`` only for clients that announced
    support for it.
    """
    command = message_command(
        consumer_id,
        ledger_id,
        entry_id,
        partition=partition,
        redelivery_count=redelivery_count,
        ack_set=ack_set,
        consumer_epoch=consumer_epoch,
    )
    return frame.payload_frame_parts(
        command,
        entry,
        with_checksum=with_checksum,
        entry_checksum=entry_checksum,
        broker_entry_metadata=broker_entry_metadata,
    )


def encode_message(
    consumer_id: int,
    ledger_id: int,
    entry_id: int,
    entry: frame.Buffer,
    *,
    entry_checksum: int | None = None,
    with_checksum: bool = True,
    partition: int = -1,
    redelivery_count: int = 0,
    broker_entry_metadata: pb.BrokerEntryMetadata | bytes | None = None,
) -> bytes:
    """A MESSAGE frame for a stored entry as one bytes object (copies the entry)."""
    header, data = message_frame_parts(
        consumer_id,
        ledger_id,
        entry_id,
        entry,
        entry_checksum=entry_checksum,
        with_checksum=with_checksum,
        partition=partition,
        redelivery_count=redelivery_count,
        broker_entry_metadata=broker_entry_metadata,
    )
    return header + bytes(data)
