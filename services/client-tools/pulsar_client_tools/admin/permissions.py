"""`pulsar-admin namespaces|topics grant-permission|revoke-permission|permissions` and the
subscription permissions, with Apache's flags (`--role`, `--actions`, `--subscription`,
`--roles`)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group, Run, comma_list, namespace_path, topic_path

#: How a command's target (tenant/namespace or a topic) becomes its admin REST path.
PathOf = Callable[[str], str]
#: Apache's AuthAction names.
ACTIONS = ("produce", "consume", "functions", "sources", "sinks", "packages")


def _actions(text: str) -> list[str]:
    actions = comma_list(text)
    unknown = sorted(set(actions) - set(ACTIONS))
    if not actions or unknown:
        raise client.AdminError(400, f"--actions must list some of {', '.join(ACTIONS)}")
    return actions


def _grant(path_of: PathOf) -> Run:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        admin.post(f"{path_of(args.target)}/permissions/{client.quote(args.role)}",
                   _actions(args.actions))
    return run


def _revoke(path_of: PathOf) -> Run:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        admin.delete(f"{path_of(args.target)}/permissions/{client.quote(args.role)}")
    return run


def _show(path_of: PathOf) -> Run:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        output.print_json(admin.get(f"{path_of(args.target)}/permissions"))
    return run


def _grant_subscription(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(f"{namespace_path(args.target)}/permissions/subscription/"
               f"{client.quote(args.subscription)}", comma_list(args.roles))


def _revoke_subscription(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(f"{namespace_path(args.target)}/permissions/"
                 f"{client.quote(args.subscription)}/{client.quote(args.role)}")


def _commands(group: Group, what: str, path_of: PathOf, target_help: str) -> None:
    grant = group.command("grant-permission", f"Grant permissions on a {what} to a role",
                          _grant(path_of))
    grant.add_argument("target", metavar=what, help=target_help)
    grant.add_argument("--role", required=True, help="client role to which to grant permissions")
    grant.add_argument("--actions", required=True,
                       help=f"comma separated actions: {', '.join(ACTIONS)}")
    revoke = group.command("revoke-permission", f"Revoke a role's permissions on a {what}",
                           _revoke(path_of))
    revoke.add_argument("target", metavar=what, help=target_help)
    revoke.add_argument("--role", required=True, help="client role whose permissions go")
    group.command("permissions", f"Get the permissions on a {what}", _show(path_of)
                  ).add_argument("target", metavar=what, help=target_help)


def register_namespace(group: Group) -> None:
    _commands(group, "namespace", namespace_path, "tenant/namespace")
    grant = group.command("grant-subscription-permission",
                          "Allow only these roles to use a subscription", _grant_subscription)
    grant.add_argument("target", metavar="namespace", help="tenant/namespace")
    grant.add_argument("-s", "--subscription", required=True, help="subscription name")
    grant.add_argument("-rs", "--roles", required=True, help="comma separated client roles")
    revoke = group.command("revoke-subscription-permission",
                           "Remove a role from a subscription's allowed roles",
                           _revoke_subscription)
    revoke.add_argument("target", metavar="namespace", help="tenant/namespace")
    revoke.add_argument("-s", "--subscription", required=True, help="subscription name")
    revoke.add_argument("-r", "--role", required=True, help="client role")


def register_topic(group: Group) -> None:
    _commands(group, "topic", topic_path, "persistent://tenant/namespace/topic")
