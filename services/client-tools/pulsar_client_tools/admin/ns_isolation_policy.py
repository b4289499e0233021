"""`pulsar-admin ns-isolation-policy set|get|list|delete|brokers|broker`, with Apache's
arguments: `set <cluster> <policy> --namespaces --primary [--secondary]
--auto-failover-policy-type min_available --auto-failover-policy-params
min_limit=1,usage_threshold=80 [--unload-scope all_matching|none|changed]`."""

from __future__ import annotations

import argparse
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group, comma_list

MIN_AVAILABLE_PARAMETERS = ("min_limit", "usage_threshold")


def _policies(args: argparse.Namespace) -> str:
    return f"/admin/v2/clusters/{client.quote(args.cluster)}/namespaceIsolationPolicies"


def _policy(args: argparse.Namespace) -> str:
    return f"{_policies(args)}/{client.quote(args.policy)}"


def _parameters(text: str) -> dict[str, str]:
    parameters = {}
    for pair in comma_list(text):
        name, sep, value = pair.partition("=")
        if not sep:
            raise client.AdminError(400, f"Unknown auto failover policy params specified : {text}")
        parameters[name.strip()] = value.strip()
    return parameters


def _set(admin: client.AdminClient, args: argparse.Namespace) -> None:
    namespaces, primary = comma_list(args.namespaces), comma_list(args.primary)
    if not namespaces:
        raise client.AdminError(400, f"unable to parse namespaces parameter list: {namespaces}")
    if not primary:
        raise client.AdminError(400, f"unable to parse primary parameter list: {namespaces}")
    if args.auto_failover_policy_type != "min_available":
        raise client.AdminError(400, "Unknown auto failover policy type specified : "
                                     f"{args.auto_failover_policy_type}")
    parameters = _parameters(args.auto_failover_policy_params)
    if sorted(parameters) != sorted(MIN_AVAILABLE_PARAMETERS):
        raise client.AdminError(400, "Unknown auto failover policy params specified : "
                                     f"{args.auto_failover_policy_params}")
    body: dict[str, Any] = {
        "namespaces": namespaces, "primary": primary, "secondary": comma_list(args.secondary),
        "auto_failover_policy": {"policy_type": "min_available", "parameters": parameters}}
    if args.unload_scope is not None:
        body["unload_scope"] = args.unload_scope
    admin.post(_policy(args), body)


def _get(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(_policy(args)))


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(_policies(args)))


def _delete(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(_policy(args))


def _brokers(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(_policies(args) + "/brokers"))


def _broker(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{_policies(args)}/brokers/{client.quote(args.broker)}"))


def register(groups: Any) -> None:
    group = Group(groups, "ns-isolation-policy", "Operations about namespace isolation policy")
    setter = group.command("set", "Create/Update a namespace isolation policy for a cluster. "
                                  "This operation requires Pulsar super-user privileges", _set)
    setter.add_argument("cluster", help="cluster-name")
    setter.add_argument("policy", help="policy-name")
    setter.add_argument("--namespaces", required=True, help="comma separated namespaces-regex list")
    setter.add_argument("--primary", required=True,
                        help="comma separated primary-broker-regex list")
    setter.add_argument("--secondary", default="",
                        help="comma separated secondary-broker-regex list")
    setter.add_argument("--auto-failover-policy-type", required=True,
                        help="auto failover policy type name ['min_available']")
    setter.add_argument("--auto-failover-policy-params", required=True,
                        help="comma separated name=value auto failover policy parameters")
    setter.add_argument("--unload-scope", choices=["all_matching", "none", "changed"],
                        help="which namespaces to unload so they are placed again")
    superuser = " This operation requires Pulsar super-user privileges"
    for name, help_text, run in (
            ("get", "Get namespace isolation policy of a cluster." + superuser, _get),
            ("delete", "Delete namespace isolation policy of a cluster." + superuser, _delete)):
        parser = group.command(name, help_text, run)
        parser.add_argument("cluster", help="cluster-name")
        parser.add_argument("policy", help="policy-name")
    group.command("list", "List all namespace isolation policies of a cluster. This operation "
                          "requires Pulsar super-user privileges", _list).add_argument("cluster")
    group.command("brokers", "List all brokers with namespace-isolation policies attached to it. "
                             "This operation requires Pulsar super-user privileges",
                  _brokers).add_argument("cluster")
    broker = group.command("broker", "Get broker with namespace-isolation policies attached to "
                                     "it. This operation requires Pulsar super-user privileges",
                           _broker)
    broker.add_argument("cluster")
    broker.add_argument("--broker", required=True,
                        help="Broker-name to get namespace-isolation policies attached to it")
