"""`pulsar-admin namespaces ...`: namespaces, their policies and topics."""

from __future__ import annotations

import argparse
import urllib.parse
from typing import Any

from pulsar_client_tools.admin import client, namespace_policies, output, permissions, units
from pulsar_client_tools.admin.common import Group, comma_list, namespace_path

ONE_MB = 1024 * 1024


def _print_get(path_suffix: str) -> Any:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        output.print_json(admin.get(namespace_path(args.namespace) + path_suffix))
    return run


def _print_list(path_suffix: str) -> Any:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        output.print_list(admin.get(namespace_path(args.namespace) + path_suffix) or [])
    return run


def _remove(path_suffix: str) -> Any:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        admin.delete(namespace_path(args.namespace) + path_suffix)
    return run


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_list(admin.get(f"/admin/v2/namespaces/{client.quote(args.tenant)}"))


def _topics(admin: client.AdminClient, args: argparse.Namespace) -> None:
    query = {"mode": args.mode}
    if args.include_system_topic:
        query["includeSystemTopic"] = "true"
    output.print_list(admin.get(namespace_path(args.namespace) + "/topics", query))


def _create(admin: client.AdminClient, args: argparse.Namespace) -> None:
    policies: dict[str, Any] = {}
    if args.bundles:
        policies["bundles"] = {"numBundles": args.bundles}
    if args.clusters:
        policies["replication_clusters"] = comma_list(args.clusters)
    admin.put(namespace_path(args.namespace), policies or None)


def _delete(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(namespace_path(args.namespace), {"force": "true"} if args.force else None)


def _unload(admin: client.AdminClient, args: argparse.Namespace) -> None:
    bundle = f"/{args.bundle}" if args.bundle else ""
    if args.destination_broker and not args.bundle:
        raise client.AdminError(400, "--destinationBroker needs --bundle")
    query = {"destinationBroker": args.destination_broker} if args.destination_broker else None
    admin.put(namespace_path(args.namespace) + bundle + "/unload", query=query)


def _split_bundle(admin: client.AdminClient, args: argparse.Namespace) -> None:
    query = {"unload": str(args.unload).lower()}
    if args.split_algorithm_name:
        query["splitAlgorithmName"] = args.split_algorithm_name
    try:
        positions = [int(p, 0) for p in comma_list(args.split_boundaries or "")]
    except ValueError as exc:
        raise client.AdminError(400, f"--split-boundaries: {exc}") from exc
    if bool(args.bundle) == bool(args.bundle_type):
        raise client.AdminError(400, "Specify exactly one of --bundle and --bundle-type")
    bundle = args.bundle or args.bundle_type
    admin.put(f"{namespace_path(args.namespace)}/{bundle}/split", positions or None,
              query=query)


def _bundles(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(namespace_path(args.namespace) + "/bundles"))


def _bundle_path(args: argparse.Namespace) -> str:
    """The namespace's path, or its bundle's with --bundle."""
    return namespace_path(args.namespace) + (f"/{args.bundle}" if args.bundle else "")


def _clear_backlog(admin: client.AdminClient, args: argparse.Namespace) -> None:
    suffix = "/clearBacklog" + (f"/{client.quote(args.subscription)}" if args.subscription else "")
    admin.post(_bundle_path(args) + suffix)


def _unsubscribe(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(_bundle_path(args) + f"/unsubscribe/{client.quote(args.subscription)}")


def _topic_positions(admin: client.AdminClient, args: argparse.Namespace) -> None:
    # The topics parameter repeats (?topics=a&topics=b), so the query is built here.
    query = urllib.parse.urlencode([("topics", t) for t in comma_list(args.topic_list)])
    output.print_json(admin.get(f"{namespace_path(args.namespace)}/{args.bundle}"
                                "/topicHashPositions" + (f"?{query}" if query else "")))


# Properties and groups (stored with the namespace; see docs/compatibility.md).

def _print_text(reply: client.Reply) -> None:
    """A bare string answer (Apache answers property values and groups unquoted)."""
    if reply.body:
        print(reply.body.decode())


def _set_property(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(f"{namespace_path(args.namespace)}/property/{client.quote(args.key)}/"
              f"{client.quote(args.value)}")


def _get_property(admin: client.AdminClient, args: argparse.Namespace) -> None:
    _print_text(admin.request(
        "GET", f"{namespace_path(args.namespace)}/property/{client.quote(args.key)}"))


def _remove_property(admin: client.AdminClient, args: argparse.Namespace) -> None:
    _print_text(admin.request(
        "DELETE", f"{namespace_path(args.namespace)}/property/{client.quote(args.key)}"))


def _set_properties(admin: client.AdminClient, args: argparse.Namespace) -> None:
    properties: dict[str, str] = {}
    for pair in comma_list(args.properties):
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise client.AdminError(400, f"Invalid property {pair!r}: expected key=value")
        properties[key] = value
    if not properties:
        raise client.AdminError(400, "Required at least one property for the namespace")
    admin.put(namespace_path(args.namespace) + "/properties", properties)


def _print_map(path_suffix: str) -> Any:
    """A map printed as Apache's pulsar-admin prints one: `key    value` lines, a list
    value as Java renders it ([a, b])."""
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        for key, value in (admin.get(namespace_path(args.namespace) + path_suffix) or {}).items():
            shown = f"[{', '.join(map(str, value))}]" if isinstance(value, list) else value
            print(f"{key}    {shown}")
    return run


def _set_anti_affinity_group(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(namespace_path(args.namespace) + "/antiAffinity", args.group)


def _get_anti_affinity_group(admin: client.AdminClient, args: argparse.Namespace) -> None:
    _print_text(admin.request("GET", namespace_path(args.namespace) + "/antiAffinity"))


def _anti_affinity_namespaces(admin: client.AdminClient, args: argparse.Namespace) -> None:
    path = (f"/admin/v2/namespaces/{client.quote(args.cluster)}/antiAffinity/"
            f"{client.quote(args.group)}")
    output.print_list(admin.get(path, {"tenant": args.tenant} if args.tenant else None) or [])


def _set_bookie_affinity_group(admin: client.AdminClient, args: argparse.Namespace) -> None:
    body = {"bookkeeperAffinityGroupPrimary": args.primary_group}
    if args.secondary_group:
        body["bookkeeperAffinityGroupSecondary"] = args.secondary_group
    admin.post(namespace_path(args.namespace) + "/persistence/bookieAffinity", body)


def _set_retention(admin: client.AdminClient, args: argparse.Namespace) -> None:
    time_s = units.seconds(args.time)
    size = units.size_bytes(args.size)
    body = {"retentionTimeInMinutes": time_s if time_s < 0 else time_s // 60,
            "retentionSizeInMB": size if size < 0 else size // ONE_MB}
    admin.post(namespace_path(args.namespace) + "/retention", body)


def _set_compaction_threshold(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(namespace_path(args.namespace) + "/compactionThreshold",
              units.size_bytes(args.threshold))


def _set_ttl(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(namespace_path(args.namespace) + "/messageTTL", units.seconds(args.ttl))


def _set_dedup(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(namespace_path(args.namespace) + "/deduplication", bool(args.enable))


def _set_auto_topic_creation(admin: client.AdminClient, args: argparse.Namespace) -> None:
    body: dict[str, Any] = {"allowAutoTopicCreation": bool(args.enable), "topicType": args.type}
    if args.type == "partitioned":
        body["defaultNumPartitions"] = args.num_partitions
    admin.post(namespace_path(args.namespace) + "/autoTopicCreation", body)


def _set_backlog_quota(admin: client.AdminClient, args: argparse.Namespace) -> None:
    body = {"limitSize": units.size_bytes(args.limit) if args.limit else -1,
            "limitTime": units.seconds(args.limit_time) if args.limit_time else -1,
            "policy": args.policy}
    admin.post(namespace_path(args.namespace) + "/backlogQuota", body,
               {"backlogQuotaType": args.type})


def _remove_backlog_quota(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(namespace_path(args.namespace) + "/backlogQuota", {"backlogQuotaType": args.type})


def _set_persistence(admin: client.AdminClient, args: argparse.Namespace) -> None:
    body = {"bookkeeperEnsemble": args.ensemble, "bookkeeperWriteQuorum": args.write_quorum,
            "bookkeeperAckQuorum": args.ack_quorum,
            "managedLedgerMaxMarkDeleteRate": args.ml_mark_delete_max_rate}
    admin.post(namespace_path(args.namespace) + "/persistence", body)


def _set_compatibility(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(namespace_path(args.namespace) + "/schemaCompatibilityStrategy", args.compatibility)


def _set_clusters(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(namespace_path(args.namespace) + "/replication", comma_list(args.clusters))


def _ns_command(group: Group, name: str, help_text: str, run: Any) -> argparse.ArgumentParser:
    parser = group.command(name, help_text, run)
    parser.add_argument("namespace", help="tenant/namespace")
    return parser


def register(groups: Any) -> None:
    group = Group(groups, "namespaces", "Operations about namespaces")
    namespace_policies.register(group)
    group.command("list", "Get the namespaces for a tenant", _list).add_argument("tenant")
    topics = _ns_command(group, "topics", "Get the list of topics for a namespace", _topics)
    topics.add_argument("-m", "--mode", default="PERSISTENT",
                        choices=["PERSISTENT", "NON_PERSISTENT", "ALL"])
    topics.add_argument("-ist", "--include-system-topic", dest="include_system_topic",
                        action="store_true", help="list the broker's own topics too")
    create = _ns_command(group, "create", "Creates a new namespace", _create)
    create.add_argument("-b", "--bundles", type=int, help="number of bundles to activate")
    create.add_argument("-c", "--clusters", help="comma separated replication clusters")
    delete = _ns_command(group, "delete", "Deletes a namespace", _delete)
    delete.add_argument("-f", "--force", action="store_true", help="delete it and its topics")
    _ns_command(group, "policies", "Get the configuration policies of a namespace",
                _print_get(""))
    unload = _ns_command(group, "unload", "Unload a namespace (every bundle) or one bundle "
                         "from the broker that serves it", _unload)
    unload.add_argument("-b", "--bundle", help="bundle range, e.g. 0x00000000_0x40000000")
    unload.add_argument("-d", "--destinationBroker", dest="destination_broker",
                        help="broker id (host:webPort) that takes the bundle next")
    split = _ns_command(group, "split-bundle", "Split a namespace bundle in two",
                        _split_bundle)
    split.add_argument("-b", "--bundle", help="bundle range to split")
    split.add_argument("-bt", "--bundle-type", dest="bundle_type", choices=["LARGEST", "HOT"],
                       help="split the bundle with the most topics, or the highest throughput "
                            "(instead of --bundle)")
    split.add_argument("-u", "--unload", action="store_true",
                       help="unload both halves afterwards (lookups may place them elsewhere)")
    split.add_argument("-san", "--split-algorithm-name", dest="split_algorithm_name",
                       choices=["range_equally_divide", "topic_count_equally_divide",
                                "specified_positions_divide"],
                       help="where to cut (default: the broker's "
                            "defaultNamespaceBundleSplitAlgorithm)")
    split.add_argument("-sb", "--split-boundaries", dest="split_boundaries",
                       help="positions for specified_positions_divide, comma separated "
                            "(decimal or 0x...)")
    _ns_command(group, "bundles", "Get the bundles of a namespace", _bundles)
    clear = _ns_command(group, "clear-backlog", "Clear the backlog of the namespace's topics",
                        _clear_backlog)
    clear.add_argument("-s", "--sub", dest="subscription", help="only this subscription")
    clear.add_argument("-b", "--bundle", help="only this bundle's topics")
    clear.add_argument("-force", "--force", action="store_true", help="do not ask (always)")
    unsubscribe = _ns_command(group, "unsubscribe",
                              "Delete a subscription from every topic of the namespace",
                              _unsubscribe)
    unsubscribe.add_argument("-s", "--sub", dest="subscription", required=True)
    unsubscribe.add_argument("-b", "--bundle", help="only this bundle's topics")
    positions = _ns_command(group, "get-topic-positions",
                            "Get the hash positions of topics in a namespace bundle",
                            _topic_positions)
    positions.add_argument("-b", "--bundle", required=True, help="bundle range")
    positions.add_argument("-tl", "--topic-list", dest="topic_list",
                           help="comma separated topics (default: every topic of the bundle)")
    _register_policies(group)
    _register_metadata(group)
    permissions.register_namespace(group)
    _ns_command(group, "subscription-permission",
                "Get permissions to access subscription admin-api",
                _print_map("/permissions/subscription"))


def _register_metadata(group: Group) -> None:
    """Properties, the anti-affinity group and the bookie-affinity group."""
    prop = _ns_command(group, "set-property", "Set property for a namespace", _set_property)
    prop.add_argument("-k", "--key", required=True, help="key of the property")
    prop.add_argument("-v", "--value", required=True, help="value of the property")
    _ns_command(group, "get-property", "Get property for a namespace",
                _get_property).add_argument("-k", "--key", required=True,
                                            help="key of the property")
    _ns_command(group, "remove-property", "Remove property for a namespace",
                _remove_property).add_argument("-k", "--key", required=True,
                                               help="key of the property")
    _ns_command(group, "set-properties", "Set properties of a namespace",
                _set_properties).add_argument("-p", "--properties", required=True,
                                              help="key=value pairs, comma separated")
    _ns_command(group, "get-properties", "Get properties of a namespace",
                _print_map("/properties"))
    _ns_command(group, "clear-properties", "Clear all properties for a namespace",
                _remove("/properties"))

    _ns_command(group, "set-anti-affinity-group", "Set Anti-affinity group name for a namespace",
                _set_anti_affinity_group).add_argument("-g", "--group", required=True,
                                                       help="anti-affinity group name")
    _ns_command(group, "get-anti-affinity-group", "Get Anti-affinity group name for a namespace",
                _get_anti_affinity_group)
    _ns_command(group, "delete-anti-affinity-group",
                "Remove Anti-affinity group name for a namespace", _remove("/antiAffinity"))
    members = group.command("get-anti-affinity-namespaces",
                            "Get Anti-affinity namespaces grouped with the given anti-affinity "
                            "group name", _anti_affinity_namespaces)
    members.add_argument("-c", "--cluster", required=True, help="cluster name")
    members.add_argument("-g", "--group", required=True, help="anti-affinity group name")
    members.add_argument("-p", "--tenant", help="the tenant whose namespaces are searched")

    bookies = _ns_command(group, "set-bookie-affinity-group", "Set the bookie-affinity group name",
                          _set_bookie_affinity_group)
    bookies.add_argument("-pg", "--primary-group", dest="primary_group", required=True,
                         help="primary bookie-affinity groups, comma separated")
    bookies.add_argument("-sg", "--secondary-group", dest="secondary_group",
                         help="secondary bookie-affinity groups, comma separated")
    _ns_command(group, "get-bookie-affinity-group", "Get the bookie-affinity group name",
                _print_get("/persistence/bookieAffinity"))
    _ns_command(group, "delete-bookie-affinity-group", "Delete the bookie-affinity group name",
                _remove("/persistence/bookieAffinity"))


def _register_policies(group: Group) -> None:
    retention = _ns_command(group, "set-retention", "Set the retention policy", _set_retention)
    retention.add_argument("-t", "--time", required=True, help="e.g. 100m, 3h, 2d, -1")
    retention.add_argument("-s", "--size", required=True, help="e.g. 10M, 16G, -1")
    _ns_command(group, "get-retention", "Get the retention policy", _print_get("/retention"))
    _ns_command(group, "remove-retention", "Remove the retention policy", _remove("/retention"))

    ttl = _ns_command(group, "set-message-ttl", "Set message TTL", _set_ttl)
    ttl.add_argument("-ttl", "--messageTTL", dest="ttl", required=True, help="e.g. 3600, 1h")
    _ns_command(group, "get-message-ttl", "Get message TTL", _print_get("/messageTTL"))
    _ns_command(group, "remove-message-ttl", "Remove message TTL", _remove("/messageTTL"))

    threshold = _ns_command(group, "set-compaction-threshold",
                            "Set the backlog size above which topics are compacted automatically",
                            _set_compaction_threshold)
    threshold.add_argument("-t", "--threshold", required=True, help="e.g. 10M, 1G (0: never)")
    _ns_command(group, "get-compaction-threshold", "Get the compaction threshold",
                _print_get("/compactionThreshold"))
    _ns_command(group, "remove-compaction-threshold", "Remove the compaction threshold",
                _remove("/compactionThreshold"))

    dedup = _ns_command(group, "set-deduplication", "Enable or disable deduplication", _set_dedup)
    switch = dedup.add_mutually_exclusive_group(required=True)
    switch.add_argument("-e", "--enable", action="store_true")
    switch.add_argument("-d", "--disable", action="store_true")
    _ns_command(group, "get-deduplication", "Get deduplication", _print_get("/deduplication"))
    _ns_command(group, "remove-deduplication", "Remove deduplication override",
                _remove("/deduplication"))

    auto = _ns_command(group, "set-auto-topic-creation", "Override auto topic creation",
                       _set_auto_topic_creation)
    auto_switch = auto.add_mutually_exclusive_group(required=True)
    auto_switch.add_argument("-e", "--enable", action="store_true")
    auto_switch.add_argument("-d", "--disable", action="store_true")
    auto.add_argument("-t", "--type", default="non-partitioned",
                      choices=["partitioned", "non-partitioned"])
    auto.add_argument("-n", "--num-partitions", type=int, default=None)
    _ns_command(group, "get-auto-topic-creation", "Get the auto topic creation override",
                _print_get("/autoTopicCreation"))
    _ns_command(group, "remove-auto-topic-creation", "Remove the auto topic creation override",
                _remove("/autoTopicCreation"))

    quota = _ns_command(group, "set-backlog-quota", "Set a backlog quota", _set_backlog_quota)
    quota.add_argument("-l", "--limit", help="size limit, e.g. 10G")
    quota.add_argument("-lt", "--limitTime", dest="limit_time", help="time limit, e.g. 1h")
    quota.add_argument("-p", "--policy", required=True,
                       choices=["producer_request_hold", "producer_exception",
                                "consumer_backlog_eviction"])
    quota.add_argument("-t", "--type", default="destination_storage",
                       choices=["destination_storage", "message_age"])
    _ns_command(group, "get-backlog-quotas", "Get the backlog quotas",
                _print_get("/backlogQuotaMap"))
    remove_quota = _ns_command(group, "remove-backlog-quota", "Remove a backlog quota",
                               _remove_backlog_quota)
    remove_quota.add_argument("-t", "--type", default="destination_storage",
                              choices=["destination_storage", "message_age"])

    persistence = _ns_command(group, "set-persistence", "Set the persistence policies",
                              _set_persistence)
    persistence.add_argument("-e", "--bookkeeper-ensemble", dest="ensemble", type=int,
                             required=True)
    persistence.add_argument("-w", "--bookkeeper-write-quorum", dest="write_quorum", type=int,
                             required=True)
    persistence.add_argument("-a", "--bookkeeper-ack-quorum", dest="ack_quorum", type=int,
                             required=True)
    persistence.add_argument("-r", "--ml-mark-delete-max-rate", dest="ml_mark_delete_max_rate",
                             type=float, default=0.0)
    _ns_command(group, "get-persistence", "Get the persistence policies",
                _print_get("/persistence"))
    _ns_command(group, "remove-persistence", "Remove the persistence policies",
                _remove("/persistence"))

    compat = _ns_command(group, "set-schema-compatibility-strategy",
                         "Set the schema compatibility strategy", _set_compatibility)
    compat.add_argument("-c", "--compatibility", required=True)
    _ns_command(group, "get-schema-compatibility-strategy", "Get the schema compatibility strategy",
                _print_get("/schemaCompatibilityStrategy"))

    clusters = _ns_command(group, "set-clusters", "Set the replication clusters", _set_clusters)
    clusters.add_argument("-c", "--clusters", required=True, help="comma separated cluster names")
    _ns_command(group, "get-clusters", "Get the replication clusters", _print_list("/replication"))
