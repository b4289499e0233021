"""`pulsar-admin resource-quotas get|set|reset-namespace-bundle-quota`, with Apache's flags:
`-n/--namespace` and `-b/--bundle` together name a bundle, neither means the default quota;
`set` takes `-mi -mo -bi -bo -mem` (all required) and `-d/--dynamic`."""

from __future__ import annotations

import argparse
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group, namespace_path

QUOTAS = "/admin/v2/resource-quotas"


def _path(args: argparse.Namespace, required: bool = False) -> str:
    if args.namespace is None and args.bundle is None and not required:
        return QUOTAS
    if args.namespace is None or args.bundle is None:
        raise client.AdminError(400, "namespace and bundle must be provided together.")
    ns = namespace_path(args.namespace).removeprefix("/admin/v2/namespaces")
    return f"{QUOTAS}{ns}/{client.quote(args.bundle)}"


def _get(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(_path(args)))


def _set(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(_path(args), {"msgRateIn": args.msgRateIn, "msgRateOut": args.msgRateOut,
                             "bandwidthIn": args.bandwidthIn, "bandwidthOut": args.bandwidthOut,
                             "memory": args.memory, "dynamic": bool(args.dynamic)})


def _reset(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(_path(args, required=True))


def _bundle_flags(parser: argparse.ArgumentParser, required: bool = False) -> None:
    parser.add_argument("-n", "--namespace", required=required,
                        help="tenant/namespace, together with --bundle")
    parser.add_argument("-b", "--bundle", required=required,
                        help="{start-boundary}_{end-boundary}, together with --namespace")


def register(groups: Any) -> None:
    group = Group(groups, "resource-quotas", "Operations about resource quotas")
    _bundle_flags(group.command(
        "get", "Get the resource quota for specified namespace bundle, or default quota if no "
               "namespace/bundle specified.", _get))
    setter = group.command(
        "set", "Set the resource quota for specified namespace bundle, or default quota if no "
               "namespace/bundle specified.", _set)
    _bundle_flags(setter)
    for short, long, help_text in (
            ("-mi", "--msgRateIn", "expected incoming messages per second"),
            ("-mo", "--msgRateOut", "expected outgoing messages per second"),
            ("-bi", "--bandwidthIn", "expected inbound bandwidth (bytes/second)"),
            ("-bo", "--bandwidthOut", "expected outbound bandwidth (bytes/second)"),
            ("-mem", "--memory", "expected memory usage (Mbytes)")):
        setter.add_argument(short, long, dest=long[2:], type=int, required=True, help=help_text)
    setter.add_argument("-d", "--dynamic", action="store_true",
                        help="dynamic (allow to be dynamically re-calculated) or not")
    _bundle_flags(group.command(
        "reset-namespace-bundle-quota",
        "Reset the specified namespace bundle's resource quota to default value.", _reset),
        required=True)
