"""`pulsar-admin topicPolicies set-|get-|remove-...`: policies of one topic, over its namespace's.

Each command is one call to the topic's REST path of the same policy (see
pulsar_broker.web.topic_policies); `get-*` prints nothing when the topic has
no value of its own, and with `-ap`/`--applied` prints the value in force
(the topic's, else the namespace's, else the broker's default).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pulsar_client_tools.admin import client, namespace_policies, output, units
from pulsar_client_tools.admin.common import Group, topic_path

ONE_MB = 1024 * 1024

Body = Callable[[argparse.Namespace], Any]
Run = Callable[[client.AdminClient, argparse.Namespace], None]


def _get(path: str) -> Run:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        query = {"applied": "true"} if getattr(args, "applied", False) else None
        value = admin.get(topic_path(args.topic) + path, query)
        if value is not None:
            output.print_json(value)
    return run


def _post(path: str, body: Body) -> Run:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        admin.post(topic_path(args.topic) + path, body(args))
    return run


def _remove(path: str) -> Run:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        admin.delete(topic_path(args.topic) + path)
    return run


def _set_ttl(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(topic_path(args.topic) + "/messageTTL", None,
               {"messageTTL": str(units.seconds(args.ttl))})


def _retention(args: argparse.Namespace) -> dict[str, int]:
    time_s, size = units.seconds(args.time), units.size_bytes(args.size)
    return {"retentionTimeInMinutes": time_s if time_s < 0 else time_s // 60,
            "retentionSizeInMB": size if size < 0 else size // ONE_MB}


def _set_backlog_quota(admin: client.AdminClient, args: argparse.Namespace) -> None:
    body = {"limitSize": units.size_bytes(args.limit) if args.limit else -1,
            "limitTime": units.seconds(args.limit_time) if args.limit_time else -1,
            "policy": args.policy}
    admin.post(topic_path(args.topic) + "/backlogQuota", body, {"backlogQuotaType": args.type})


def _remove_backlog_quota(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(topic_path(args.topic) + "/backlogQuota", {"backlogQuotaType": args.type})


def _policy(group: Group, suffix: str, path: str, noun: str, setter: Run,
            applied: tuple[str, ...] | None = ("-ap", "--applied")) -> argparse.ArgumentParser:
    """set-, get- and remove-<suffix>; applied: the flags of get's `--applied` (None: none, as
    Apache's command has none)."""
    made = group.command(f"set-{suffix}", f"Set the {noun} of a topic", setter)
    made.add_argument("topic")
    getter = group.command(f"get-{suffix}", f"Get the {noun} of a topic", _get(path))
    getter.add_argument("topic")
    if applied:
        getter.add_argument(*applied, dest="applied", action="store_true",
                            help="the value in force: the topic's, else the namespace's, "
                                 "else the broker's")
    group.command(f"remove-{suffix}", f"Remove the {noun} of a topic",
                  _remove(path)).add_argument("topic")
    return made


#: suffix -> (REST path, noun, (short, long) flag of the value); the GETs of max consumers per
#: subscription and max subscriptions per topic take no `--applied` in Apache.
LIMITS = {
    "max-producers": ("/maxProducers", "max producers", ("-p", "--max-producers")),
    "max-consumers": ("/maxConsumers", "max consumers", ("-c", "--max-consumers")),
    "max-consumers-per-subscription": ("/maxConsumersPerSubscription",
                                       "max consumers per subscription",
                                       ("-c", "--max-consumers-per-subscription")),
    "max-subscriptions-per-topic": ("/maxSubscriptionsPerTopic", "max subscriptions",
                                    ("-s", "--max-subscriptions-per-topic")),
    "max-unacked-messages-per-consumer": ("/maxUnackedMessagesOnConsumer",
                                          "max unacked messages per consumer",
                                          ("-m", "--maxNum")),
    "max-unacked-messages-per-subscription": ("/maxUnackedMessagesOnSubscription",
                                              "max unacked messages per subscription",
                                              ("-m", "--maxNum")),
}
NO_APPLIED = ("max-consumers-per-subscription", "max-subscriptions-per-topic", "publish-rate")


def register(groups: Any) -> None:
    group = Group(groups, "topicPolicies", "Operations on the policies of a topic")
    retention = _policy(group, "retention", "/retention", "retention",
                        _post("/retention", _retention))
    retention.add_argument("-t", "--time", required=True, help="e.g. 100m, 3h, 2d, -1")
    retention.add_argument("-s", "--size", required=True, help="e.g. 10M, 16G, -1")
    ttl = _policy(group, "message-ttl", "/messageTTL", "message TTL", _set_ttl)
    ttl.add_argument("-t", "--ttl", required=True, help="seconds, or e.g. 1h, 2d")
    for suffix, (path, noun, (short, long)) in LIMITS.items():
        dest = long.lstrip("-").replace("-", "_")
        _policy(group, suffix, path, noun, _post(path, namespace_policies.attribute(dest)),
                applied=None if suffix in NO_APPLIED else ("-ap", "--applied")).add_argument(
            short, long, dest=dest, type=int, required=True)
    rate = _policy(group, "publish-rate", "/publishRate", "publish rate",
                   _post("/publishRate", lambda a: {
                       "publishThrottlingRateInMsg": a.msg_publish_rate,
                       "publishThrottlingRateInByte": a.byte_publish_rate}), applied=None)
    rate.add_argument("-m", "--msg-publish-rate", type=int, default=-1)
    rate.add_argument("-b", "--byte-publish-rate", type=int, default=-1)
    for suffix, path, noun in (
            ("dispatch-rate", "/dispatchRate", "message-dispatch-rate"),
            ("subscription-dispatch-rate", "/subscriptionDispatchRate",
             "message-dispatch-rate of each subscription")):
        dispatch = _policy(group, suffix, path, noun, _post(path, lambda a: {
            "dispatchThrottlingRateInMsg": a.msg_dispatch_rate,
            "dispatchThrottlingRateInByte": a.byte_dispatch_rate,
            "ratePeriodInSecond": a.dispatch_rate_period,
            "relativeToPublishRate": bool(a.relative_to_publish_rate)}))
        dispatch.add_argument("-md", "--msg-dispatch-rate", type=int, default=-1)
        dispatch.add_argument("-bd", "--byte-dispatch-rate", type=int, default=-1)
        dispatch.add_argument("-dt", "--dispatch-rate-period", type=int, default=1,
                              help="seconds (default 1)")
        dispatch.add_argument("-rp", "--relative-to-publish-rate", action="store_true")
    subscribe = _policy(group, "subscribe-rate", "/subscribeRate", "subscribe-rate per consumer",
                        _post("/subscribeRate", lambda a: {
                            "subscribeThrottlingRatePerConsumer": a.subscribe_rate,
                            "ratePeriodInSecond": a.subscribe_rate_period}))
    subscribe.add_argument("-sr", "--subscribe-rate", type=int, default=-1)
    subscribe.add_argument("-st", "--subscribe-rate-period", type=int, default=30,
                           help="seconds (default 30)")
    threshold = _policy(group, "compaction-threshold", "/compactionThreshold",
                        "compaction threshold",
                        _post("/compactionThreshold", lambda a: units.size_bytes(a.threshold)))
    threshold.add_argument("-t", "--threshold", required=True, help="e.g. 10M, 1G (0: never)")
    _register_switches(group)
    _register_records(group)


def _register_switches(group: Group) -> None:
    dedup = _policy(group, "deduplication", "/deduplicationEnabled", "deduplication status",
                    _post("/deduplicationEnabled", namespace_policies.switch))
    namespace_policies.switch_flags(dedup)
    auto_sub = _policy(group, "auto-subscription-creation", "/autoSubscriptionCreation",
                       "auto subscription creation override",
                       _post("/autoSubscriptionCreation",
                             lambda a: {"allowAutoSubscriptionCreation": bool(a.enable)}),
                       applied=("-a", "-ap", "--applied"))
    auto_sub.add_argument("-e", "--enable", action="store_true",
                          help="allow consumers to create subscriptions (without: forbid)")
    delayed = _policy(group, "delayed-delivery", "/delayedDelivery", "delayed delivery policy",
                      _post("/delayedDelivery", namespace_policies.delayed_delivery_body))
    namespace_policies.switch_flags(delayed)
    delayed.add_argument("-t", "--time", default="1s",
                         help="tick time of delayed delivery, e.g. 1s, 10s, 1m (default 1s)")


def _register_records(group: Group) -> None:
    persistence = _policy(group, "persistence", "/persistence", "persistence policies",
                          _post("/persistence", lambda a: {
                              "bookkeeperEnsemble": a.ensemble,
                              "bookkeeperWriteQuorum": a.write_quorum,
                              "bookkeeperAckQuorum": a.ack_quorum,
                              "managedLedgerMaxMarkDeleteRate": a.ml_mark_delete_max_rate}))
    persistence.add_argument("-e", "--bookkeeper-ensemble", dest="ensemble", type=int, default=2)
    persistence.add_argument("-w", "--bookkeeper-write-quorum", dest="write_quorum", type=int,
                             default=2)
    persistence.add_argument("-a", "--bookkeeper-ack-quorum", dest="ack_quorum", type=int,
                             default=2)
    persistence.add_argument("-r", "--ml-mark-delete-max-rate", dest="ml_mark_delete_max_rate",
                             type=float, default=0.0)
    inactive = _policy(group, "inactive-topic-policies", "/inactiveTopicPolicies",
                       "inactive topic policies",
                       _post("/inactiveTopicPolicies",
                             namespace_policies.inactive_topic_policies_body))
    inactive.add_argument("-e", "--enable-delete-while-inactive", action="store_true")
    inactive.add_argument("-d", "--disable-delete-while-inactive", action="store_true")
    inactive.add_argument("-t", "--max-inactive-duration", required=True,
                          help="e.g. 1s, 10s, 1m, 5h, 3d")
    inactive.add_argument("-m", "--delete-mode", required=True,
                          choices=["delete_when_no_subscriptions",
                                   "delete_when_subscriptions_caught_up"])
    quota = group.command("set-backlog-quota", "Set a backlog quota policy for a topic",
                          _set_backlog_quota)
    quota.add_argument("topic")
    quota.add_argument("-l", "--limit", help="size limit, e.g. 10M, 16G")
    quota.add_argument("-lt", "--limitTime", dest="limit_time", help="time limit, e.g. 1h")
    quota.add_argument("-p", "--policy", required=True,
                       choices=["producer_request_hold", "producer_exception",
                                "consumer_backlog_eviction"])
    quota.add_argument("-t", "--type", default="destination_storage",
                       choices=["destination_storage", "message_age"])
    get_quota = group.command("get-backlog-quota", "Get the backlog quota policies of a topic",
                              _get("/backlogQuotaMap"))
    get_quota.add_argument("topic")
    get_quota.add_argument("-ap", "--applied", action="store_true",
                           help="the quotas in force: the topic's, else the namespace's, else "
                                "the broker's")
    remove_quota = group.command("remove-backlog-quota",
                                 "Remove a backlog quota policy from a topic",
                                 _remove_backlog_quota)
    remove_quota.add_argument("topic")
    remove_quota.add_argument("-t", "--type", default="destination_storage",
                              choices=["destination_storage", "message_age"])
