"""`pulsar-admin topicPolicies set-|get-|remove-...`: policies of one topic, over its namespace's.

Each command is one call to the topic's REST path of the same policy (see
pulsar_broker.web.topic_policies); `get-*` prints nothing when the topic has
no value of its own.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pulsar_client_tools.admin import client, output, units
from pulsar_client_tools.admin.common import Group, topic_path

ONE_MB = 1024 * 1024

Body = Callable[[argparse.Namespace], Any]
Run = Callable[[client.AdminClient, argparse.Namespace], None]


def _get(path: str) -> Run:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        value = admin.get(topic_path(args.topic) + path)
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


def _policy(group: Group, suffix: str, path: str, noun: str,
            setter: Run) -> argparse.ArgumentParser:
    made = group.command(f"set-{suffix}", f"Set the {noun} of a topic", setter)
    made.add_argument("topic")
    group.command(f"get-{suffix}", f"Get the {noun} of a topic", _get(path)).add_argument("topic")
    group.command(f"remove-{suffix}", f"Remove the {noun} of a topic",
                  _remove(path)).add_argument("topic")
    return made


def _attribute(dest: str) -> Body:
    return lambda args: getattr(args, dest)


#: suffix -> (REST path, noun, (short, long) flag of the value)
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
}


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
        _policy(group, suffix, path, noun, _post(path, _attribute(dest))).add_argument(
            short, long, dest=dest, type=int, required=True)
    rate = _policy(group, "publish-rate", "/publishRate", "publish rate",
                   _post("/publishRate", lambda a: {
                       "publishThrottlingRateInMsg": a.msg_publish_rate,
                       "publishThrottlingRateInByte": a.byte_publish_rate}))
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
