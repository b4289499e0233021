"""`pulsar-admin bookies list-bookies|racks-placement|get-bookie-rack|set-bookie-rack|delete-bookie-rack`."""

from __future__ import annotations

import argparse
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group

BASE = "/admin/v2/bookies"


def _list(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{BASE}/all"))


def _racks(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{BASE}/racks-info"))


def _get_rack(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get(f"{BASE}/racks-info/{client.quote(args.bookie)}"))


def _set_rack(admin: client.AdminClient, args: argparse.Namespace) -> None:
    query = {"group": args.group, "rack": args.rack}
    if args.hostname:
        query["hostname"] = args.hostname
    admin.post(f"{BASE}/racks-info/{client.quote(args.bookie)}", None, query)


def _delete_rack(admin: client.AdminClient, args: argparse.Namespace) -> None:
    admin.delete(f"{BASE}/racks-info/{client.quote(args.bookie)}")


def register(groups: Any) -> None:
    group = Group(groups, "bookies", "Operations about bookies rack placement")
    group.command("list-bookies", "List the bookies registered in the cluster", _list)
    group.command("racks-placement", "Get the rack placement of every bookie", _racks)
    group.command("get-bookie-rack", "Get the rack placement of one bookie",
                  _get_rack).add_argument("-b", "--bookie", required=True, help="host:port")
    setter = group.command("set-bookie-rack", "Set the rack placement of a bookie", _set_rack)
    setter.add_argument("-b", "--bookie", required=True, help="host:port")
    setter.add_argument("-r", "--rack", required=True, help="rack, e.g. /region-a/rack-1")
    setter.add_argument("-g", "--group", default="default", help="group (default: default)")
    setter.add_argument("--hostname", default=None, help="the bookie's host name")
    group.command("delete-bookie-rack", "Remove the rack placement of a bookie",
                  _delete_rack).add_argument("-b", "--bookie", required=True, help="host:port")
