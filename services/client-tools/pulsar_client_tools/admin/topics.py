"""`pulsar-admin topics ...`: topics, partitioned topics, stats and subscriptions."""

from __future__ import annotations

import argparse
import time
from typing import Any

from pulsar_client_tools.admin import (
    client,
    output,
    peek,
    permissions,
    topic_messages,
    topic_trim,
    units,
)
from pulsar_client_tools.admin.common import Group, namespace_path, topic_name, topic_path

_INT64_MAX = 2**63 - 1


def message_id(text: str) -> dict[str, int]:
    """`latest`, `earliest` or `ledgerId:entryId` as the REST API's MessageId JSON."""
    if text == "latest":
        return {"ledgerId": _INT64_MAX, "entryId": _INT64_MAX}
    if text == "earliest":
        return {"ledgerId": -1, "entryId": -1}
    parts = text.split(":")
    try:
        return {"ledgerId": int(parts[0]), "entryId": int(parts[1])}
    except (IndexError, ValueError) as exc:
        raise units.UnitError(f"invalid message id {text!r}: use ledgerId:entryId") from exc


def _list_partitioned(admin: client.AdminClient, args: argparse.Namespace) -> None:
    path = namespace_path(args.namespace).replace("/namespaces/", "/persistent/")
    output.print_list(admin.get(path + "/partitioned", _system_query(args)))


def _system_query(args: argparse.Namespace) -> dict[str, str]:
    return {"includeSystemTopic": "true"} if args.include_system_topic else {}


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    """Persistent and non-persistent topics (as Apache's getList), or one domain's."""
    path = namespace_path(args.namespace)
    domains = {"persistent": ["persistent"], "non_persistent": ["non-persistent"]}.get(
        args.topic_domain or "", ["persistent", "non-persistent"])
    query = _system_query(args)
    if args.bundle:
        query["bundle"] = args.bundle
    topics: list[str] = []
    for domain in domains:
        topics += admin.get(path.replace("/namespaces/", f"/{domain}/"), query) or []
    output.print_list(topics)


def _print(suffix: str, query: dict[str, str] | None = None) -> Any:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        output.print_json(admin.get(topic_path(args.topic) + suffix, query))
    return run


def _lookup_path(topic: str) -> str:
    """/lookup/v2/topic/<domain>/<tenant>/<ns>/<topic> of the same topic."""
    return "/lookup/v2/topic/" + topic_path(topic).removeprefix("/admin/v2/")


def _lookup(admin: client.AdminClient, args: argparse.Namespace) -> None:
    print(admin.get(_lookup_path(args.topic))["brokerUrl"])


def _partitioned_lookup(admin: client.AdminClient, args: argparse.Namespace) -> None:
    """Each partition's broker, or with --sort-by-broker each broker's partitions."""
    count = admin.get(topic_path(args.topic) + "/partitions")["partitions"]
    base = str(topic_name(args.topic))
    names = [f"{base}-partition-{i}" for i in range(count)] if count else [base]
    brokers = {name: admin.get(_lookup_path(name))["brokerUrl"] for name in names}
    if not args.sort_by_broker:
        output.print_json(brokers)
        return
    by_broker: dict[str, list[str]] = {}
    for name, broker in brokers.items():
        by_broker.setdefault(broker, []).append(name)
    output.print_json(by_broker)


def _bundle_range(admin: client.AdminClient, args: argparse.Namespace) -> None:
    print(admin.request("GET", _lookup_path(args.topic) + "/bundle").body.decode())


def _create(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(topic_path(args.topic), topic_messages.metadata_map(args.metadata) or None)


def _delete(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(topic_path(args.topic), {"force": "true"} if args.force else None)


def _create_partitioned(admin: client.AdminClient, args: argparse.Namespace) -> None:
    properties = topic_messages.metadata_map(args.metadata)
    body = {"partitions": args.partitions, "properties": properties} if properties else \
        args.partitions
    admin.put(topic_path(args.topic) + "/partitions", body)


def _update_partitioned(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(topic_path(args.topic) + "/partitions", args.partitions)


def _delete_partitioned(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(topic_path(args.topic) + "/partitions", {"force": "true"} if args.force else None)


def _stats_query(args: argparse.Namespace) -> dict[str, str]:
    """Apache's GetStatsOptions flags as the REST query parameters."""
    return {"getPreciseBacklog": _text(args.get_precise_backlog),
            "subscriptionBacklogSize": _text(args.get_subscription_backlog_size),
            "getEarliestTimeInBacklog": _text(args.get_earliest_time_in_backlog),
            "excludePublishers": _text(args.exclude_publishers),
            "excludeConsumers": _text(args.exclude_consumers)}


def _text(flag: bool) -> str:
    return "true" if flag else "false"


def _boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError(f"expected true or false, not {text!r}")
    return text.lower() == "true"


def _stats_flags(parser: argparse.ArgumentParser) -> None:
    """-gpb, -sbs, -etb, -ep and -ec as Apache's pulsar-admin takes them (a bare flag means
    true)."""
    for short, long, default, help_text in (
            ("-gpb", "--get-precise-backlog", False, "count the backlog precisely"),
            ("-sbs", "--get-subscription-backlog-size", True,
             "each subscription's backlogSize (false: -1)"),
            ("-etb", "--get-earliest-time-in-backlog", False,
             "the publish time of the oldest message in each backlog"),
            ("-ep", "--exclude-publishers", False, "leave the publishers out"),
            ("-ec", "--exclude-consumers", False, "leave the consumers out")):
        parser.add_argument(short, long, nargs="?", const=True, default=default, type=_boolean,
                            metavar="true|false", help=f"{help_text} (default {_text(default)})")


def _stats(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(topic_path(args.topic) + "/stats", _stats_query(args)))


def _partitioned_stats(admin: client.AdminClient, args: argparse.Namespace) -> None:
    query = {"perPartition": _text(args.per_partition), **_stats_query(args)}
    output.print_json(admin.get(topic_path(args.topic) + "/partitioned-stats", query))


def _internal_stats(admin: client.AdminClient, args: argparse.Namespace) -> None:
    query = {"metadata": "true"} if args.metadata else None
    output.print_json(admin.get(topic_path(args.topic) + "/internalStats", query))


def _subscriptions(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_list(admin.get(topic_path(args.topic) + "/subscriptions"))


def _sub_path(args: argparse.Namespace) -> str:
    return f"{topic_path(args.topic)}/subscription/{client.quote(args.subscription)}"


def _create_subscription(admin: client.AdminClient, args: argparse.Namespace) -> None:
    body: dict[str, Any] = dict(message_id(args.message_id))
    properties = topic_messages.key_values(args.property)
    if properties:
        body["properties"] = properties
    admin.put(_sub_path(args), body)


def _unsubscribe(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(_sub_path(args), {"force": "true"} if args.force else None)


def _skip(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(f"{_sub_path(args)}/skip/{args.count}")


def _clear_backlog(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(f"{_sub_path(args)}/skip_all")


def _expire(admin: client.AdminClient, args: argparse.Namespace) -> None:
    """By age (-t) or up to a message id (-p), as Apache's: one of them, not both."""
    if args.expire_time is not None and args.position:
        raise units.UnitError(
            "Can't expire message by time and by message position at the same time.")
    if args.expire_time is not None:
        admin.post(f"{_sub_path(args)}/expireMessages/{units.seconds(args.expire_time)}")
    elif args.position:
        body = {**message_id(args.position), "isExcluded": args.exclude_reset_position}
        admin.post(f"{_sub_path(args)}/expireMessages", body)
    else:
        raise units.UnitError("Either time (--expireTime) or message position (--position) "
                              "has to be provided to expire messages")


def _expire_all(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(f"{topic_path(args.topic)}/all_subscription/expireMessages/"
               f"{units.seconds(args.expire_time)}")


def _reset_cursor(admin: client.AdminClient, args: argparse.Namespace) -> None:
    if args.time is not None:
        timestamp_ms = int(time.time() * 1000) - units.seconds(args.time) * 1000
        admin.post(f"{_sub_path(args)}/resetcursor/{timestamp_ms}")
    elif args.message_id is not None:
        admin.post(f"{_sub_path(args)}/resetcursor", message_id(args.message_id),
                   {"isExcluded": "true"} if args.exclude_message else None)
    else:
        raise units.UnitError("Either --time or --messageId must be given")


def _unload(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(topic_path(args.topic) + "/unload")


def _terminate(admin: client.AdminClient, args: argparse.Namespace) -> None:
    last = admin.post(topic_path(args.topic) + "/terminate")
    print(f"Topic successfully terminated at {last['ledgerId']}:{last['entryId']}")


def _compact(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(topic_path(args.topic) + "/compaction")
    print(f"Topic compaction requested for {args.topic}")


#: Pause between two status requests of `compaction-status --wait-complete`.
_COMPACTION_POLL_S = 1.0


def _compaction_status(admin: client.AdminClient, args: argparse.Namespace) -> None:
    status = admin.get(topic_path(args.topic) + "/compaction")
    while args.wait_complete and status.get("status") == "RUNNING":
        time.sleep(_COMPACTION_POLL_S)
        status = admin.get(topic_path(args.topic) + "/compaction")
    state = status.get("status")
    if state == "NOT_RUN":
        print(f"Compaction has not been run for {args.topic} since broker startup")
    elif state == "RUNNING":
        print("Compaction is currently running")
    elif state == "SUCCESS":
        print("Compaction was a success")
    else:
        raise client.AdminError(500, f"Error compacting: {status.get('lastError', '')}")


def _peek(admin: client.AdminClient, args: argparse.Namespace) -> None:
    peek.print_messages(admin, _sub_path(args), args.count)


def _message_by_id(admin: client.AdminClient, args: argparse.Namespace) -> None:
    peek.print_message_by_id(admin, topic_path(args.topic), args.ledger_id, args.entry_id)


def _backlog_size(admin: client.AdminClient, args: argparse.Namespace) -> None:
    print(admin.put(topic_path(args.topic) + "/backlogSize", message_id(args.message_id)))


def _analyze_backlog(admin: client.AdminClient, args: argparse.Namespace) -> None:
    body = message_id(args.position) if args.position else None
    output.print_json(admin.post(_sub_path(args) + "/analyzeBacklog", body))


def _topic_command(group: Group, name: str, help_text: str, run: Any) -> argparse.ArgumentParser:
    parser = group.command(name, help_text, run)
    parser.add_argument("topic", help="persistent://tenant/namespace/topic")
    return parser


def _sub_command(group: Group, name: str, help_text: str, run: Any) -> argparse.ArgumentParser:
    parser = _topic_command(group, name, help_text, run)
    parser.add_argument("-s", "--subscription", required=True, help="subscription name")
    return parser


def register(groups: Any) -> None:
    group = Group(groups, "topics", "Operations on persistent topics")
    permissions.register_topic(group)
    listing = group.command("list", "Get the list of topics under a namespace", _list)
    listing.add_argument("namespace")
    listing.add_argument("-td", "--topic-domain", choices=["persistent", "non_persistent"],
                         help="only this kind of topics (default: both)")
    listing.add_argument("-b", "--bundle", help="only the topics of this bundle (0x..._0x...)")
    partitioned_listing = group.command("list-partitioned-topics",
                                        "Get the partitioned topics of a namespace",
                                        _list_partitioned)
    partitioned_listing.add_argument("namespace")
    for parser in (listing, partitioned_listing):
        parser.add_argument("-ist", "--include-system-topic", action="store_true",
                            help="include the broker's system topics")
    topic_messages.add_metadata_option(
        _topic_command(group, "create", "Create a non-partitioned topic", _create))
    delete = _topic_command(group, "delete", "Delete a topic", _delete)
    delete.add_argument("-f", "--force", action="store_true")
    create_partitioned = _topic_command(group, "create-partitioned-topic",
                                        "Create a partitioned topic", _create_partitioned)
    topic_messages.add_metadata_option(create_partitioned)
    update_partitioned = _topic_command(group, "update-partitioned-topic",
                                        "Raise the partition count of a partitioned topic",
                                        _update_partitioned)
    for command in (create_partitioned, update_partitioned):
        command.add_argument("-p", "--partitions", type=int, required=True,
                             help="number of partitions")
    _topic_command(group, "get-partitioned-topic-metadata", "Get the partition count",
                   _print("/partitions"))
    _topic_command(group, "delete-partitioned-topic", "Delete a partitioned topic",
                   _delete_partitioned).add_argument("-f", "--force", action="store_true")
    _stats_flags(_topic_command(group, "stats", "Get the stats of a topic", _stats))
    partitioned = _topic_command(group, "partitioned-stats",
                                 "Get the stats of a partitioned topic", _partitioned_stats)
    partitioned.add_argument("--per-partition", action="store_true",
                             help="the stats of each partition too")
    _stats_flags(partitioned)
    _topic_command(group, "stats-internal", "Get the internal stats of a topic",
                   _internal_stats).add_argument(
        "-m", "--metadata", action="store_true", help="include each ledger's metadata")
    _topic_command(group, "partitioned-stats-internal",
                   "Get the internal stats of each partition of a partitioned topic",
                   _print("/partitioned-internalStats"))
    _topic_command(group, "last-message-id", "Get the last message id of a topic",
                   _print("/lastMessageId"))
    _topic_command(group, "subscriptions", "Get the subscriptions of a topic", _subscriptions)
    by_id = _topic_command(group, "get-message-by-id", "Get a message by its id", _message_by_id)
    by_id.add_argument("-l", "--ledgerId", dest="ledger_id", type=int, required=True)
    by_id.add_argument("-e", "--entryId", dest="entry_id", type=int, required=True)
    _topic_command(group, "unload", "Unload a topic", _unload)
    _topic_command(group, "lookup", "Look up the broker serving a topic", _lookup)
    _topic_command(group, "partitioned-lookup", "Look up the broker of each partition",
                   _partitioned_lookup).add_argument(
        "-s", "--sort-by-broker", action="store_true", help="group the partitions by broker")
    _topic_command(group, "bundle-range", "Get the namespace bundle a topic falls into",
                   _bundle_range)
    _topic_command(group, "terminate", "Terminate a topic (no more messages)", _terminate)
    _topic_command(group, "compact", "Run compaction on a topic", _compact)
    _topic_command(group, "compaction-status", "Get the status of a topic's compaction",
                   _compaction_status).add_argument(
        "-w", "--wait-complete", action="store_true", help="wait until compaction completes")
    topic_messages.register(group, _topic_command, _sub_command)
    topic_trim.register(group, _topic_command)
    _register_subscription_commands(group)


def _register_subscription_commands(group: Group) -> None:
    create = _sub_command(group, "create-subscription", "Create a subscription", _create_subscription)
    create.add_argument("-m", "--messageId", dest="message_id", default="latest",
                        help="latest, earliest or ledgerId:entryId")
    topic_messages.add_property_option(create)
    _sub_command(group, "unsubscribe", "Delete a subscription",
                 _unsubscribe).add_argument("-f", "--force", action="store_true")
    _sub_command(group, "skip", "Skip messages of a subscription", _skip).add_argument(
        "-n", "--count", type=int, required=True, help="number of messages to skip")
    _sub_command(group, "clear-backlog", "Skip every message of a subscription", _clear_backlog)
    expire = _sub_command(group, "expire-messages",
                          "Expire messages older than a time, or up to a message id", _expire)
    expire.add_argument("-t", "--expireTime", dest="expire_time")
    expire.add_argument("-p", "--position", help="expire up to this message id (ledgerId:entryId)")
    expire.add_argument("-e", "--exclude-reset-position", action="store_true",
                        help="Exclude the reset position, start consume messages from the next "
                             "position")
    _topic_command(group, "expire-messages-all-subscriptions",
                   "Expire messages older than a time on every subscription",
                   _expire_all).add_argument("-t", "--expireTime", dest="expire_time",
                                             required=True)
    reset = _sub_command(group, "reset-cursor", "Reset a subscription's position", _reset_cursor)
    reset.add_argument("-t", "--time", help="go back this far, e.g. 100m, 3h, 2d")
    reset.add_argument("-m", "--messageId", dest="message_id", help="ledgerId:entryId")
    reset.add_argument("-e", "--exclude-message", action="store_true",
                       help="start after the given message id")
    _sub_command(group, "peek-messages", "Peek at the messages of a subscription",
                 _peek).add_argument("-n", "--count", type=int, default=1)
    _sub_command(group, "analyze-backlog", "Analyze the backlog of a subscription (read from "
                 "storage)", _analyze_backlog).add_argument(
        "-p", "--position", help="message position to start the scan from (ledgerId:entryId)")
    _topic_command(group, "get-backlog-size", "Calculate backlog size by a message ID (in "
                   "bytes)", _backlog_size).add_argument(
        "-m", "--messageId", dest="message_id", default="-1:-1",
        help="the message id (ledgerId:entryId) to count from; -1:-1 for the whole topic")
