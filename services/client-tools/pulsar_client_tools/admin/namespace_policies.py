"""`pulsar-admin namespaces set-|get-|remove-...` for the limit, rate, schema and delivery
policies.

Flags are Apache's (`set-max-producers-per-topic -p`, `set-publish-rate -m -b`,
`set-dispatch-rate -md -bd -dt -rp`, `set-subscribe-rate -sr -st`,
`set-inactive-topic-policies -e|-d -t -m`, `set-subscription-types-enabled -t`,
`set-schema-autoupdate-strategy -c|-d`, `set-delayed-delivery -e|-d -t`, ...). Each
command is one call to the namespace's REST path of the same policy.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pulsar_client_tools.admin import client, output, units
from pulsar_client_tools.admin.common import Group, comma_list, namespace_path

Body = Callable[[argparse.Namespace], Any]

#: command suffix -> (REST path, help noun, set flags (short, long, dest)).
LIMITS: dict[str, tuple[str, str, tuple[str, str]]] = {
    "max-producers-per-topic": ("/maxProducersPerTopic", "maxProducersPerTopic",
                                ("-p", "--max-producers-per-topic")),
    "max-consumers-per-topic": ("/maxConsumersPerTopic", "maxConsumersPerTopic",
                                ("-c", "--max-consumers-per-topic")),
    "max-consumers-per-subscription": ("/maxConsumersPerSubscription",
                                       "maxConsumersPerSubscription",
                                       ("-c", "--max-consumers-per-subscription")),
    "max-unacked-messages-per-consumer": ("/maxUnackedMessagesPerConsumer",
                                          "maxUnackedMessagesPerConsumer",
                                          ("-c", "--max-unacked-messages-per-topic")),
    "max-unacked-messages-per-subscription": ("/maxUnackedMessagesPerSubscription",
                                              "maxUnackedMessagesPerSubscription",
                                              ("-c", "--max-unacked-messages-per-subscription")),
    "max-subscriptions-per-topic": ("/maxSubscriptionsPerTopic", "maxSubscriptionsPerTopic",
                                    ("-m", "--max-subscriptions-per-topic")),
    "max-topics-per-namespace": ("/maxTopicsPerNamespace", "maxTopicsPerNamespace",
                                 ("-t", "--max-topics-per-namespace")),
    "deduplication-snapshot-interval": ("/deduplicationSnapshotInterval",
                                        "deduplicationSnapshotInterval", ("-i", "--interval")),
}


def _get(path: str) -> Callable[[client.AdminClient, argparse.Namespace], None]:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        value = admin.get(namespace_path(args.namespace) + path)
        output.print_json(value if value is not None else "null")
    return run


def _post(path: str, body: Body) -> Callable[[client.AdminClient, argparse.Namespace], None]:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        admin.post(namespace_path(args.namespace) + path, body(args))
    return run


def _remove(path: str) -> Callable[[client.AdminClient, argparse.Namespace], None]:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        admin.delete(namespace_path(args.namespace) + path)
    return run


def _command(group: Group, name: str, help_text: str,
             run: Callable[[client.AdminClient, argparse.Namespace], None]
             ) -> argparse.ArgumentParser:
    parser = group.command(name, help_text, run)
    parser.add_argument("namespace", help="tenant/namespace")
    return parser


def _policy(group: Group, suffix: str, path: str, noun: str, body: Body
            ) -> argparse.ArgumentParser:
    """set-<suffix>, get-<suffix> and remove-<suffix>; returns the set command's parser."""
    setter = _command(group, f"set-{suffix}", f"Set {noun} for a namespace", _post(path, body))
    _command(group, f"get-{suffix}", f"Get {noun} for a namespace", _get(path))
    _command(group, f"remove-{suffix}", f"Remove {noun} for a namespace", _remove(path))
    return setter


def _dispatch_rate_flags(parser: argparse.ArgumentParser, relative: bool = True) -> None:
    parser.add_argument("-md", "--msg-dispatch-rate", type=int, default=-1)
    parser.add_argument("-bd", "--byte-dispatch-rate", type=int, default=-1)
    parser.add_argument("-dt", "--dispatch-rate-period", type=int, default=1,
                        help="seconds (default 1)")
    if relative:
        parser.add_argument("-rp", "--relative-to-publish-rate", action="store_true")


def _dispatch_rate(args: argparse.Namespace) -> dict[str, Any]:
    return {"dispatchThrottlingRateInMsg": args.msg_dispatch_rate,
            "dispatchThrottlingRateInByte": args.byte_dispatch_rate,
            "ratePeriodInSecond": args.dispatch_rate_period,
            "relativeToPublishRate": bool(args.relative_to_publish_rate)}


def inactive_topic_policies_body(args: argparse.Namespace) -> dict[str, Any]:
    if args.enable_delete_while_inactive == args.disable_delete_while_inactive:
        raise client.AdminError(
            400, "Need to specify either enable-delete-while-inactive or "
                 "disable-delete-while-inactive")
    return {"inactiveTopicDeleteMode": args.delete_mode,
            "maxInactiveDurationSeconds": units.seconds(args.max_inactive_duration),
            "deleteWhileInactive": bool(args.enable_delete_while_inactive)}


def attribute(dest: str) -> Body:
    return lambda args: getattr(args, dest)


def switch(args: argparse.Namespace) -> bool:
    if bool(args.enable) == bool(args.disable):
        raise client.AdminError(400, "Need to specify either --enable or --disable")
    return bool(args.enable)


def switch_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-e", "--enable", action="store_true")
    parser.add_argument("-d", "--disable", action="store_true")


SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
#: set-schema-autoupdate-strategy --compatibility -> Apache's SchemaAutoUpdateCompatibilityStrategy.
AUTO_UPDATE_STRATEGIES = {"FULL": "Full", "BACKWARD": "Backward", "FORWARD": "Forward",
                          "NONE": "AlwaysCompatible"}


def _subscription_types(args: argparse.Namespace) -> list[str]:
    types = comma_list(args.types)
    unknown = [t for t in types if t not in SUBSCRIPTION_TYPES]
    if not types or unknown:
        raise client.AdminError(400, "--types must list some of " + ", ".join(SUBSCRIPTION_TYPES))
    return types


def _set_auto_update_strategy(admin: client.AdminClient, args: argparse.Namespace) -> None:
    if args.disabled:
        strategy = "AutoUpdateDisabled"
    else:
        strategy = AUTO_UPDATE_STRATEGIES.get((args.compatibility or "").upper(), "")
        if not strategy:
            raise client.AdminError(400, "Either --compatibility or --disabled must be specified")
    admin.put(namespace_path(args.namespace) + "/schemaAutoUpdateCompatibilityStrategy", strategy)


def _get_auto_update_strategy(admin: client.AdminClient, args: argparse.Namespace) -> None:
    strategy = admin.get(namespace_path(args.namespace) + "/schemaAutoUpdateCompatibilityStrategy")
    print(str(strategy).upper())


def _get_schema_validation_enforced(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(namespace_path(args.namespace) + "/schemaValidationEnforced",
                                {"applied": str(args.applied).lower()}))


def delayed_delivery_body(args: argparse.Namespace) -> dict[str, Any]:
    return {"active": switch(args), "tickTime": units.seconds(args.time) * 1000}


def _register_schema_and_delivery(group: Group) -> None:
    """Subscription types, the schema settings and delayed delivery."""
    types = _command(group, "set-subscription-types-enabled",
                     "Set subscription types enabled for a namespace",
                     _post("/subscriptionTypesEnabled", _subscription_types))
    types.add_argument("-t", "--types", required=True,
                       help="comma separated: " + ", ".join(SUBSCRIPTION_TYPES))
    _command(group, "get-subscription-types-enabled",
             "Get subscription types enabled for a namespace", _get("/subscriptionTypesEnabled"))
    _command(group, "remove-subscription-types-enabled",
             "Remove subscription types enabled for a namespace",
             _remove("/subscriptionTypesEnabled"))
    auto_update = _command(group, "set-schema-autoupdate-strategy",
                           "Set the schema auto-update strategy for a namespace",
                           _set_auto_update_strategy)
    auto_update.add_argument("-c", "--compatibility",
                             help="Full, Backward, Forward or None (always compatible)")
    auto_update.add_argument("-d", "--disabled", action="store_true",
                             help="disable automatic schema updates")
    _command(group, "get-schema-autoupdate-strategy",
             "Get the schema auto-update strategy for a namespace", _get_auto_update_strategy)
    switch_flags(_command(group, "set-is-allow-auto-update-schema",
                           "Set whether producers may update the schema of a namespace",
                           _post("/isAllowAutoUpdateSchema", switch)))
    _command(group, "get-is-allow-auto-update-schema",
             "Get whether producers may update the schema of a namespace",
             _get("/isAllowAutoUpdateSchema"))
    switch_flags(_command(group, "set-schema-validation-enforce",
                           "Set whether schema validation is enforced in a namespace",
                           _post("/schemaValidationEnforced", switch)))
    _command(group, "get-schema-validation-enforce",
             "Get whether schema validation is enforced in a namespace",
             _get_schema_validation_enforced).add_argument(
        "-ap", "--applied", action="store_true", help="the value in force (broker default)")
    delayed = _command(group, "set-delayed-delivery",
                       "Set the delayed delivery policy on a namespace",
                       _post("/delayedDelivery", delayed_delivery_body))
    switch_flags(delayed)
    delayed.add_argument("-t", "--time", default="1s",
                         help="tick time of delayed delivery, e.g. 1s, 10s, 1m (default 1s)")
    _command(group, "get-delayed-delivery", "Get the delayed delivery policy for a namespace",
             _get("/delayedDelivery"))
    _command(group, "remove-delayed-delivery",
             "Remove delayed delivery policies from a namespace", _remove("/delayedDelivery"))


def register(group: Group) -> None:
    """Add the policy commands to the `namespaces` group."""
    _register_schema_and_delivery(group)
    for suffix, (path, noun, (short, long)) in LIMITS.items():
        dest = long.lstrip("-").replace("-", "_")
        _policy(group, suffix, path, noun, attribute(dest)).add_argument(
            short, long, dest=dest, type=int, required=True)
    setter = _policy(group, "subscription-expiration-time", "/subscriptionExpirationTime",
                     "subscription expiration time (minutes)", lambda a: a.time)
    setter.add_argument("-t", "--time", type=int, required=True, help="minutes")

    publish = _policy(group, "publish-rate", "/publishRate", "publish-rate for all topics",
                      lambda a: {"publishThrottlingRateInMsg": a.msg_publish_rate,
                                 "publishThrottlingRateInByte": a.byte_publish_rate})
    publish.add_argument("-m", "--msg-publish-rate", type=int, default=-1)
    publish.add_argument("-b", "--byte-publish-rate", type=int, default=-1)
    _dispatch_rate_flags(_policy(group, "dispatch-rate", "/dispatchRate",
                                 "message-dispatch-rate for all topics", _dispatch_rate))
    _dispatch_rate_flags(_policy(group, "subscription-dispatch-rate", "/subscriptionDispatchRate",
                                 "message-dispatch-rate for all subscriptions", _dispatch_rate))
    subscribe = _policy(group, "subscribe-rate", "/subscribeRate",
                        "subscribe-rate per consumer for all topics",
                        lambda a: {"subscribeThrottlingRatePerConsumer": a.subscribe_rate,
                                   "ratePeriodInSecond": a.subscribe_rate_period})
    subscribe.add_argument("-sr", "--subscribe-rate", type=int, default=-1)
    subscribe.add_argument("-st", "--subscribe-rate-period", type=int, default=30,
                           help="seconds (default 30)")

    inactive = _policy(group, "inactive-topic-policies", "/inactiveTopicPolicies",
                       "the inactive topic policies", inactive_topic_policies_body)
    inactive.add_argument("-e", "--enable-delete-while-inactive", action="store_true")
    inactive.add_argument("-d", "--disable-delete-while-inactive", action="store_true")
    inactive.add_argument("-t", "--max-inactive-duration", required=True,
                          help="e.g. 1s, 10s, 1m, 5h, 3d")
    inactive.add_argument("-m", "--delete-mode", required=True,
                          choices=["delete_when_no_subscriptions",
                                   "delete_when_subscriptions_caught_up"])
    auto_sub = _policy(group, "auto-subscription-creation", "/autoSubscriptionCreation",
                       "the auto subscription creation override",
                       lambda a: {"allowAutoSubscriptionCreation": bool(a.enable)})
    auto_sub.add_argument("-e", "--enable", action="store_true",
                          help="allow consumers to create subscriptions (without: forbid)")
    encryption = _command(group, "set-encryption-required",
                          "Enable or disable message encryption required for a namespace",
                          _post("/encryptionRequired", switch))
    switch_flags(encryption)
    _command(group, "get-encryption-required", "Get encryption required for a namespace",
             _get("/encryptionRequired"))
    auth_mode = _command(group, "set-subscription-auth-mode",
                         "Set subscription auth mode on a namespace",
                         _post("/subscriptionAuthMode", lambda a: a.subscription_auth_mode))
    auth_mode.add_argument("-m", "--subscription-auth-mode", required=True,
                           choices=["None", "Prefix"])
    _command(group, "get-subscription-auth-mode", "Get subscriptionAuthMode for a namespace",
             _get("/subscriptionAuthMode"))
