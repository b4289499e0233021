"""`pulsar-admin brokers healthcheck|list|leader-broker|namespaces|version|backlog-quota-check`
and the dynamic configuration: `list-dynamic-config` (the keys that may change at runtime,
one per line), `get-all-dynamic-config` (the values set, JSON), `update-dynamic-config
--config --value`, `delete-dynamic-config --config` and `get-runtime-config` (every
setting, JSON), as Apache's."""

from __future__ import annotations

import argparse
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group


def _healthcheck(admin: client.AdminClient, args: argparse.Namespace) -> None:
    query = {"topicVersion": args.topic_version} if args.topic_version else None
    admin.request("GET", "/admin/v2/brokers/health", query=query)
    print("ok")


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    path = f"/admin/v2/brokers/{client.quote(args.cluster)}" if args.cluster else "/admin/v2/brokers"
    output.print_list(admin.get(path))


def _leader(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get("/admin/v2/brokers/leaderBroker"))


def _namespaces(admin: client.AdminClient, args: argparse.Namespace) -> None:
    broker = args.url.removeprefix("http://").removeprefix("https://").rstrip("/")
    path = (f"/admin/v2/brokers/{client.quote(args.cluster)}/{client.quote(broker)}"
            "/ownedNamespaces")
    output.print_json(admin.get(path))


def _version(admin: client.AdminClient, args: argparse.Namespace) -> None:
    print(admin.request("GET", "/admin/v2/brokers/version").body.decode())


def _backlog_quota_check(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.request("GET", "/admin/v2/brokers/backlog-quota-check")
    print("ok")


CONFIGURATION = "/admin/v2/brokers/configuration"


def _list_dynamic(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_list(admin.get(CONFIGURATION))


def _get_all_dynamic(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(CONFIGURATION + "/values"))


def _update_dynamic(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(f"{CONFIGURATION}/{client.quote(args.config)}/{client.quote(args.value)}")


def _delete_dynamic(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(f"{CONFIGURATION}/{client.quote(args.config)}")


def _runtime(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(CONFIGURATION + "/runtime"))


def register(groups: Any) -> None:
    group = Group(groups, "brokers", "Operations about brokers")
    group.command("healthcheck", "Run a health check against the broker",
                  _healthcheck).add_argument("-tv", "--topic-version", choices=["V1", "V2"],
                                             help="the heartbeat topic's naming")
    group.command("list", "List active brokers of the cluster", _list).add_argument(
        "cluster", nargs="?")
    group.command("leader-broker", "Get the information of the leader broker", _leader)
    namespaces = group.command("namespaces", "List the bundles a broker owns", _namespaces)
    namespaces.add_argument("cluster")
    namespaces.add_argument("--url", required=True, help="the broker, host:webPort")
    group.command("version", "Get the version of the broker", _version)
    group.command("backlog-quota-check", "Manually trigger backlogQuotaCheck",
                  _backlog_quota_check)
    group.command("list-dynamic-config", "Get list of updatable configuration name",
                  _list_dynamic)
    group.command("get-all-dynamic-config", "Get all overridden dynamic-configuration values",
                  _get_all_dynamic)
    update = group.command("update-dynamic-config",
                           "Update dynamic-serviceConfiguration of broker", _update_dynamic)
    update.add_argument("--config", required=True, help="service-configuration name")
    update.add_argument("--value", required=True, help="service-configuration value")
    group.command("delete-dynamic-config", "Delete dynamic-serviceConfiguration of broker",
                  _delete_dynamic).add_argument("--config", required=True,
                                                help="service-configuration name")
    group.command("get-runtime-config", "Get runtime configuration values", _runtime)
