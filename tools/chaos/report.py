"""The chaos run's report: the checker's result as JSON and as a markdown table."""

from __future__ import annotations

import json
import pathlib
from typing import Any


def write(result: dict[str, Any], report_dir: pathlib.Path) -> None:
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "chaos-report.json").write_text(json.dumps(result, indent=2) + "\n")
    (report_dir / "chaos-report.md").write_text(markdown(result))


def summary(result: dict[str, Any]) -> str:
    return (f"seed {result['seed']}: {result['cycles']} cycles, "
            f"{result['acknowledged_sends']} acknowledged sends, lost {result['lost']}, "
            f"duplicates with dedup {result['duplicates_with_dedup']}, "
            f"order violations {result['order_violations']}, "
            f"unexcused subscription regressions {result['unexcused_subscription_regressions']}, "
            f"unclosed ledgers {len(result['unclosed_ledgers'])}, "
            f"unavailable {result['unavailable_s']}s (longest {result['longest_unavailable_s']}s)")


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Chaos run, seed {result['seed']}",
        "",
        f"{result['cycles']} cycles in {result['duration_s']} s.",
        "",
        "| check | result |",
        "|---|---|",
        f"| acknowledged sends | {result['acknowledged_sends']} |",
        f"| failed send attempts (retried) | {result['failed_send_attempts']} |",
        f"| acknowledged messages lost | {result['lost']} |",
        f"| duplicates, topics with deduplication | {result['duplicates_with_dedup']} |",
        f"| duplicates, topics without deduplication | {result['duplicates_without_dedup']} |",
        f"| per-key order violations | {result['order_violations']} |",
        f"| subscription regressions (all / not excused by a broker fault) | "
        f"{len(result['subscription_regressions'])} / "
        f"{result['unexcused_subscription_regressions']} "
        f"(of {result['mark_delete_positions_sampled']} positions sampled) |",
        f"| ledgers left open behind a topic's last ledger | {len(result['unclosed_ledgers'])} |",
        f"| time without an acknowledged send on any topic | {result['unavailable_s']} s "
        f"(longest gap {result['longest_unavailable_s']} s) |",
        *(f"| time without an acknowledged send on {t['topic']} | {t['unavailable_s']} s "
          f"(longest gap {t['longest_unavailable_s']} s) |" for t in result["topics"]),
        f"| messages consumed and acknowledged / read by readers | {result['consumed']} / "
        f"{result['read_by_readers']} |",
        "",
        "| fault | times | time without an acknowledged send on any topic, from its start "
        "to the next fault's |",
        "|---|---|---|",
        *(f"| {kind} | {count} | {result['unavailable_s_by_fault_kind'].get(kind, 0.0)} s |"
          for kind, count in result["faults_by_kind"].items()),
        *(f"| {kind} | skipped: {why} | |" for kind, why in result["faults_skipped"].items()),
        "",
        "| process | peak RSS (MiB) |",
        "|---|---|",
        *(f"| {role} | {mib} |" for role, mib in result["peak_rss_mib"].items()),
        "",
    ]
    if result["workload_errors"]:
        lines += ["Workload errors:", "", *(f"- {e}" for e in result["workload_errors"]), ""]
    return "\n".join(lines)
