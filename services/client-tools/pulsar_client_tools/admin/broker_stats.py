"""`pulsar-admin broker-stats load-report`: the load report of the broker at --admin-url."""

from __future__ import annotations

import argparse
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group


def _load_report(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get("/admin/v2/broker-stats/load-report"))


def register(groups: Any) -> None:
    group = Group(groups, "broker-stats", "Operations to collect broker statistics")
    group.command("load-report", "Dump the broker's load report (resource usage, rates, "
                  "per-bundle stats)", _load_report)
