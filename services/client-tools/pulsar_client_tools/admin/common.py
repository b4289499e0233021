"""Helpers the command groups share: groups of subcommands and name arguments."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from pulsar_common import naming

from pulsar_client_tools.admin import client

Run = Callable[[client.AdminClient, argparse.Namespace], None]


class Group:
    """One `pulsar-admin <group>` with its commands."""

    def __init__(self, groups: Any, name: str, help_text: str) -> None:
        self.parser = groups.add_parser(name, help=help_text, description=help_text)
        self.parser.set_defaults(group_parser=self.parser)
        self._commands = self.parser.add_subparsers(dest="command", metavar="<command>")

    def command(self, name: str, help_text: str, run: Run,
                aliases: Sequence[str] = ()) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = self._commands.add_parser(
            name, help=help_text, description=help_text, aliases=list(aliases))
        parser.set_defaults(run=run, command_parser=parser)
        return parser


def topic_name(text: str) -> naming.TopicName:
    """Any accepted topic name form, or the 412 the broker would answer."""
    try:
        return naming.TopicName.parse(text)
    except naming.InvalidTopicNameError as exc:
        raise client.AdminError(412, f"Invalid topic name: {text}") from exc


def topic_path(text: str) -> str:
    """`/admin/v2/persistent/t/ns/topic` for any accepted topic name form."""
    name = topic_name(text)
    return (f"/admin/v2/{name.domain.value}/{client.quote(name.tenant)}/"
            f"{client.quote(name.namespace)}/{client.quote(name.local_name)}")


def namespace_path(text: str) -> str:
    try:
        ns = naming.NamespaceName.parse(text)
    except naming.InvalidTopicNameError as exc:
        raise client.AdminError(412, f"Invalid namespace name: {text}") from exc
    return f"/admin/v2/namespaces/{client.quote(ns.tenant)}/{client.quote(ns.namespace)}"


def comma_list(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]
