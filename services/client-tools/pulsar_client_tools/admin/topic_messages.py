"""`pulsar-admin topics examine-messages`, `get-message-id`, `partitioned-terminate`,
`create-missed-partitions`, and the topic and subscription properties commands.

examine-messages prints one message the way Apache's command does: its id
(`Batch Message ID: l:e:0` for the first message of a batch), publish and
event times in milliseconds, its properties when it has any, and a hex dump.
"""

from __future__ import annotations

import argparse
import datetime
import json
from typing import Any

from pulsar_client_tools.admin import client, output, peek, units
from pulsar_client_tools.admin.common import Group, topic_name, topic_path


def _time_ms(header: str | None) -> int:
    """An `X-Pulsar-*-time` header (ISO 8601, UTC) in epoch milliseconds; 0 when absent."""
    if not header:
        return 0
    moment = datetime.datetime.fromisoformat(header)
    return round(moment.timestamp() * 1000)


def _examine(admin: client.AdminClient, args: argparse.Namespace) -> None:
    query = {"initialPosition": args.initial_position,
             "messagePosition": str(args.message_position)}
    reply = admin.request("GET", f"{topic_path(args.topic)}/examinemessage", query=query)
    headers = {k.lower(): v for k, v in reply.headers.items()}
    message_id = headers.get("x-pulsar-message-id", "")
    in_batch = headers.get("x-pulsar-num-batch-message")
    properties: dict[str, str]
    if in_batch is None:
        print(f"Message ID: {message_id}")
        payload = reply.body
        properties = peek.header_properties(headers)
        event_time_ms = _time_ms(headers.get("x-pulsar-event-time"))
    else:
        from pulsar_common.wire import batch  # Only reading batches needs protobuf.

        first = batch.unpack_batch(reply.body, int(in_batch))[0]
        print(f"Batch Message ID: {message_id}:{first.batch_index}")
        payload = first.payload
        properties = {kv.key: kv.value for kv in first.metadata.properties}
        event_time_ms = first.metadata.event_time
    print(f"Publish time: {_time_ms(headers.get('x-pulsar-publish-time'))}")
    print(f"Event time: {event_time_ms}")
    if headers.get("x-pulsar-deliver-at-time"):
        print(f"Deliver at time: {_time_ms(headers['x-pulsar-deliver-at-time'])}")
    if properties:
        print("Properties:")
        output.print_json(properties)
    print(output.hex_dump(payload))


def datetime_ms(text: str) -> int:
    """ISO_OFFSET_DATE_TIME (2021-06-28T16:53:08Z, 2021-06-28T16:53:08.123+08:00) in epoch
    milliseconds; the offset is required, as in Apache."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError as exc:
        raise units.UnitError(f"invalid datetime {text!r}: use e.g. 2021-06-28T16:53:08Z") \
            from exc
    if moment.tzinfo is None:
        raise units.UnitError(f"invalid datetime {text!r}: an offset (Z, +08:00) is required")
    return round(moment.timestamp() * 1000)


def _message_id(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{topic_path(args.topic)}/messageid/{datetime_ms(args.datetime)}"))


def _partitioned_terminate(admin: client.AdminClient, args: argparse.Namespace) -> None:
    ends = admin.post(topic_path(args.topic) + "/terminate/partitions") or {}
    name = topic_name(args.topic)
    for index in sorted(ends, key=int):
        last = ends[index]
        print(f"Topic {name}-partition-{index} successfully terminated at "
              f"{last['ledgerId']}:{last['entryId']}:{last.get('partitionIndex', -1)}")


def _create_missed_partitions(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(topic_path(args.topic) + "/createMissedPartitions")


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected key=value, not {text!r}")
    return key, value


def _get_properties(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(topic_path(args.topic) + "/properties"))


def _update_properties(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(topic_path(args.topic) + "/properties", key_values(args.property))


def _remove_properties(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(topic_path(args.topic) + "/properties",
                 None if args.key is None else {"key": args.key})


def metadata_map(values: list[str] | None) -> dict[str, str]:
    """`-m a=1,b=2 -m c=3` (Apache's --metadata) as a map."""
    return dict(_key_value(part) for value in values or [] for part in value.split(",")
                if part)


def add_metadata_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-m", "--metadata", action="append", metavar="a=a,b=b",
                        help="the topic's properties, key=value pairs separated by commas")


def key_values(pairs: list[tuple[str, str]] | None) -> dict[str, str]:
    """Repeated `-p key=value` options as a map."""
    return dict(pairs or [])


def add_property_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-p", "--property", action="append", type=_key_value, metavar="key=value",
                        help="a property (repeat: -p a=b -p c=d)")


def _subscription_properties_path(args: argparse.Namespace) -> str:
    return (f"{topic_path(args.topic)}/subscription/{client.quote(args.subscription)}"
            "/properties")


def _get_subscription_properties(admin: client.AdminClient, args: argparse.Namespace) -> None:
    # Apache prints this one as compact JSON.
    print(json.dumps(admin.get(_subscription_properties_path(args)), separators=(",", ":")))


def _update_subscription_properties(admin: client.AdminClient,
                                    args: argparse.Namespace) -> None:
    properties = key_values(args.property)
    if not properties and not args.clear:
        raise units.UnitError("If you want to clear the properties you have to use --clear")
    if args.clear and properties:
        raise units.UnitError("If you set --clear then you should not pass any properties")
    admin.put(_subscription_properties_path(args), properties)


def register(group: Group, topic_command: Any, sub_command: Any) -> None:
    """Add these commands to `pulsar-admin topics`; topic_command(group, name, help, run)
    makes a command taking the topic name, sub_command one taking -s too."""
    examine = topic_command(group, "examine-messages",
                            "Examine a specific message on a topic by position relative to the "
                            "earliest or the latest message", _examine)
    examine.add_argument("-i", "--initialPosition", dest="initial_position", default="latest",
                         help="latest or earliest (default latest)")
    examine.add_argument("-m", "--messagePosition", dest="message_position", type=int, default=1,
                         help="the position of the message (default 1)")
    topic_command(group, "get-message-id", "Get the id of the first message published at or "
                  "after a time", _message_id).add_argument(
        "-d", "--datetime", required=True,
        help="ISO_OFFSET_DATE_TIME, e.g. 2021-06-28T16:53:08Z or 2021-06-28T16:53:08.123+08:00")
    topic_command(group, "partitioned-terminate", "Terminate every partition of a partitioned "
                  "topic (no more messages)", _partitioned_terminate)
    topic_command(group, "create-missed-partitions", "Create the partitions of a partitioned "
                  "topic that do not exist yet", _create_missed_partitions)
    topic_command(group, "get-properties", "Get the properties of a topic", _get_properties)
    add_property_option(topic_command(group, "update-properties",
                                      "Add or change properties of a topic", _update_properties))
    topic_command(group, "remove-properties", "Remove a key from the properties of a topic",
                  _remove_properties).add_argument("-k", "--key", help="the key to remove")
    sub_command(group, "get-subscription-properties",
                "Get the properties of a subscription on a topic", _get_subscription_properties)
    update = sub_command(group, "update-subscription-properties",
                         "Replace the properties of a subscription on a topic",
                         _update_subscription_properties)
    add_property_option(update)
    update.add_argument("-c", "--clear", action="store_true", help="remove all properties")
