"""`pulsar-admin tenants list|get|create|update|delete`."""

from __future__ import annotations

import argparse
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group, comma_list

BASE = "/admin/v2/tenants"


def _tenant_info(admin: client.AdminClient, args: argparse.Namespace) -> dict[str, Any]:
    clusters = comma_list(args.allowed_clusters)
    if not clusters:
        # Apache's CLI allows every cluster when none is named.
        clusters = admin.get("/admin/v2/clusters")
    return {"adminRoles": comma_list(args.admin_roles), "allowedClusters": clusters}


def _info_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tenant")
    parser.add_argument("-r", "--admin-roles", help="comma separated list of auth principals")
    parser.add_argument("-c", "--allowed-clusters", help="comma separated allowed clusters")


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_list(admin.get(BASE))


def _get(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{BASE}/{client.quote(args.tenant)}"))


def _create(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.put(f"{BASE}/{client.quote(args.tenant)}", _tenant_info(admin, args))


def _update(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.post(f"{BASE}/{client.quote(args.tenant)}", _tenant_info(admin, args))


def _delete(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(f"{BASE}/{client.quote(args.tenant)}",
                 {"force": "true"} if args.force else None)


def register(groups: Any) -> None:
    group = Group(groups, "tenants", "Operations about tenants")
    group.command("list", "List the existing tenants", _list)
    group.command("get", "Gets the configuration of a tenant", _get).add_argument("tenant")
    _info_options(group.command("create", "Creates a new tenant", _create))
    _info_options(group.command("update", "Updates the configuration for a tenant", _update))
    delete = group.command("delete", "Deletes an existing tenant", _delete)
    delete.add_argument("tenant")
    delete.add_argument("-f", "--force", action="store_true", help="delete tenant forcefully")
