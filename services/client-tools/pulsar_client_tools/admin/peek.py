"""`topics peek-messages`: read the backlog's first entries and print each message.

The REST API returns one entry per position; a batched entry comes back as
its whole (decompressed) batch payload, which is split here into its
messages with pulsar_common.wire.batch, as Apache's admin client does.
"""

from __future__ import annotations

import json

from pulsar_client_tools.admin import client, output

PROPERTY_PREFIX = "x-pulsar-property-"


def header_properties(headers: dict[str, str]) -> dict[str, str]:
    """A peeked message's properties: the X-Pulsar-PROPERTY JSON header keeps the keys' case,
    which the per-key headers lose to HTTP's case-insensitive names."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if "x-pulsar-property" in lowered:
        parsed = json.loads(lowered["x-pulsar-property"])
        return {str(k): str(v) for k, v in parsed.items()}
    return {k[len(PROPERTY_PREFIX):]: v for k, v in lowered.items() if k.startswith(PROPERTY_PREFIX)}


def print_message_by_id(admin: client.AdminClient, topic_path: str, ledger_id: int,
                        entry_id: int) -> None:
    reply = admin.request("GET", f"{topic_path}/ledger/{ledger_id}/entry/{entry_id}")
    _print_reply(reply, count=None)


def print_messages(admin: client.AdminClient, subscription_path: str, count: int) -> None:
    """Print up to count messages from the start of the subscription's backlog."""
    printed = 0
    position = 1
    while printed < count:
        try:
            reply = admin.request("GET", f"{subscription_path}/position/{position}")
        except client.AdminError as exc:
            if exc.status == 404 and position > 1:
                return  # The backlog holds fewer messages than asked for, as in Apache's.
            raise
        printed += _print_reply(reply, count - printed)
        position += 1


def _print_reply(reply: client.Reply, count: int | None) -> int:
    """Print the message(s) of one entry, at most count of them; returns how many."""
    headers = {k.lower(): v for k, v in reply.headers.items()}
    message_id = headers.get("x-pulsar-message-id", "")
    publish_time = headers.get("x-pulsar-publish-time", "")
    in_batch = headers.get("x-pulsar-num-batch-message")
    if in_batch is None:
        _print_one(f"Message ID: {message_id}", publish_time, header_properties(reply.headers),
                   reply.body)
        return 1
    from pulsar_common.wire import batch  # Only reading batches needs protobuf.

    singles = batch.unpack_batch(reply.body, int(in_batch))[:count]
    for single in singles:
        properties = {kv.key: kv.value for kv in single.metadata.properties}
        _print_one(f"Batch Message ID: {message_id}:{single.batch_index}", publish_time,
                   properties, single.payload)
    return len(singles)


def _print_one(id_line: str, publish_time: str, properties: dict[str, str], payload: bytes) -> None:
    print(id_line)
    if publish_time:
        print(f"Publish time: {publish_time}")
    print("Properties:")
    output.print_json(properties)
    print(output.hex_dump(payload))
