"""Reading single entries for the admin API: a peek at a subscription's backlog (the nth
unacknowledged entry), an examined position counted from either end of the topic,
and the position a publish time falls on; each entry is answered as an HTTP response.

Like Apache, the body is the entry's payload, decompressed; for a batch it is
the whole batch payload (`size | SingleMessageMetadata | bytes` records) and
the `X-Pulsar-num-batch-message` header tells admin clients to split it (our
`pulsar-admin topics peek-messages` does, with pulsar_common.wire.batch).
The message metadata travels in `X-Pulsar-*` headers.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence

from aiohttp import web
from pulsar_common.wire import compression
from pulsar_common.wire import entry as wire_entry
from pulsar_common.wire import pulsar_api_pb2 as pb

from pulsar_broker import errors
from pulsar_broker.managed_ledger import api as ml

#: Entries read per step while walking the backlog to the nth unacknowledged one.
PEEK_READ_BATCH = 100


async def nth_unacknowledged(ledger: ml.ManagedLedger, cursor: ml.ManagedCursor,
                             nth: int) -> ml.Entry:
    """The nth (1-based) entry after the mark-delete position that is not acknowledged."""
    reader = ledger.new_non_durable_cursor(cursor.mark_delete_position, name=None)
    try:
        seen = 0
        while True:
            entries = await reader.read_entries(PEEK_READ_BATCH)
            if not entries:
                raise errors.NotFoundError("Message not found")
            for entry in entries:
                if cursor.is_acknowledged(entry.position):
                    continue
                seen += 1
                if seen == nth:
                    return entry
    finally:
        await reader.close()


def nth_stored_position(ledgers: Sequence[ml.LedgerInfo], nth: int) -> ml.Position | None:
    """The nth (1-based) stored entry counted from the oldest, or None past either end.
    A ledger holds entries 0 .. entries-1; trimming deletes whole ledgers only."""
    if nth < 1:
        return None
    for info in ledgers:
        if nth <= info.entries:
            return ml.Position(info.ledger_id, nth - 1)
        nth -= info.entries
    return None


def position_after(ledgers: Sequence[ml.LedgerInfo], position: ml.Position) -> ml.Position:
    """The stored position that follows position; just past it when it is the newest."""
    following = False
    for info in ledgers:
        if info.ledger_id == position.ledger_id:
            if position.entry_id + 1 < info.entries:
                return ml.Position(info.ledger_id, position.entry_id + 1)
            following = True
        elif following and info.entries > 0:
            return ml.Position(info.ledger_id, 0)
    return ml.Position(position.ledger_id, position.entry_id + 1)


async def examine(ledger: ml.ManagedLedger, from_earliest: bool, message_position: int) -> ml.Entry:
    """The entry message_position entries from the oldest (from_earliest) or the newest (1
    is the newest), as Apache's examinemessage counts them."""
    total = ledger.number_of_entries
    if total <= 0:
        raise errors.PreconditionFailedError(
            "Could not examine messages due to the total message is zero")
    nth = message_position if from_earliest else total - message_position + 1
    position = nth_stored_position(ledger.ledgers, nth)
    if position is None:
        raise errors.NotFoundError("Message not found")
    return await ledger.read_entry(position)


def format_time_ms(ms: int) -> str:
    """Apache's header time format: ISO 8601 in UTC with milliseconds."""
    moment = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _header_text(value: str) -> str:
    return value.replace("\r", " ").replace("\n", " ")


def metadata_headers(position: ml.Position, metadata: pb.MessageMetadata) -> dict[str, str]:
    headers = {"X-Pulsar-Message-ID": str(position)}
    properties = {kv.key: kv.value for kv in metadata.properties}
    for key, value in properties.items():
        headers[f"X-Pulsar-PROPERTY-{_header_text(key)}"] = _header_text(value)
    if properties:
        headers["X-Pulsar-PROPERTY"] = _header_text(json.dumps(properties))
    headers["X-Pulsar-publish-time"] = format_time_ms(metadata.publish_time)
    if metadata.HasField("event_time") and metadata.event_time:
        headers["X-Pulsar-event-time"] = format_time_ms(metadata.event_time)
    if metadata.HasField("deliver_at_time"):
        headers["X-Pulsar-deliver-at-time"] = format_time_ms(metadata.deliver_at_time)
    if wire_entry.is_batch(metadata):
        headers["X-Pulsar-num-batch-message"] = str(metadata.num_messages_in_batch)
        headers["X-Pulsar-batch-size"] = str(metadata.num_messages_in_batch)
    if metadata.HasField("null_value"):
        headers["X-Pulsar-null-value"] = str(metadata.null_value).lower()
    headers["X-Pulsar-producer-name"] = _header_text(metadata.producer_name)
    headers["X-Pulsar-sequence-id"] = str(metadata.sequence_id)
    if metadata.HasField("partition_key"):
        headers["X-Pulsar-partition-key"] = _header_text(metadata.partition_key)
    headers["X-Pulsar-compression"] = pb.CompressionType.Name(metadata.compression)
    headers["X-Pulsar-uncompressed-size"] = str(metadata.uncompressed_size)
    headers["X-Pulsar-Is-Encrypted"] = str(len(metadata.encryption_keys) > 0).lower()
    return headers


def entry_response(entry: ml.Entry) -> web.Response:
    metadata = wire_entry.parse_entry_metadata(entry.data)
    raw = wire_entry.entry_payload(entry.data)
    if len(metadata.encryption_keys) > 0:
        body = bytes(raw)  # Only its consumers can decrypt it.
    else:
        body = compression.decompress(metadata.compression, raw, metadata.uncompressed_size)
    return web.Response(body=body, headers=metadata_headers(entry.position, metadata),
                        content_type="application/octet-stream")
