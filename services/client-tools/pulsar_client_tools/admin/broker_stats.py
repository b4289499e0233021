"""`pulsar-admin broker-stats load-report|topics`: the load report of the broker at
--admin-url and the stats of the topics it serves. `topics` prints compact JSON, or
indented with `-i`, as Apache's does."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group


def _load_report(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get("/admin/v2/broker-stats/load-report"))


def _topics(admin: client.AdminClient, args: argparse.Namespace) -> None:
    dump = admin.get("/admin/v2/broker-stats/topics")
    print(json.dumps(dump, indent=2) if args.indent else json.dumps(dump, separators=(",", ":")))


def register(groups: Any) -> None:
    group = Group(groups, "broker-stats", "Operations to collect broker statistics")
    group.command("load-report", "Dump the broker's load report (resource usage, rates, "
                  "per-bundle stats)", _load_report)
    group.command("topics", "Dump topic stats", _topics).add_argument(
        "-i", "--indent", action="store_true", help="Indent JSON output")
