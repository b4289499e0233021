"""`pulsar-admin broker-stats load-report|topics|monitoring-metrics`: the load report of
the broker at --admin-url, the stats of the topics it serves and its per-namespace
metrics. `topics` and `monitoring-metrics` print compact JSON, or indented with `-i`, as
Apache's do."""

from __future__ import annotations

import argparse
import json
from typing import Any

from pulsar_client_tools.admin import client, output
from pulsar_client_tools.admin.common import Group


def _load_report(admin: client.AdminClient, args: argparse.Namespace) -> None:
    output.print_json(admin.get("/admin/v2/broker-stats/load-report"))


def _printer(path: str) -> Any:
    def run(admin: client.AdminClient, args: argparse.Namespace) -> None:
        dump = admin.get(path)
        print(json.dumps(dump, indent=2) if args.indent
              else json.dumps(dump, separators=(",", ":")))
    return run


def register(groups: Any) -> None:
    group = Group(groups, "broker-stats", "Operations to collect broker statistics")
    group.command("load-report", "Dump the broker's load report (resource usage, rates, "
                  "per-bundle stats)", _load_report)
    for name, help_text, path in (
            ("topics", "Dump topic stats", "/admin/v2/broker-stats/topics"),
            ("monitoring-metrics", "Dump metrics for Monitoring",
             "/admin/v2/broker-stats/metrics")):
        group.command(name, help_text, _printer(path)).add_argument(
            "-i", "--indent", action="store_true", help="Indent JSON output")
