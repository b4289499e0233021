"""A short chaos run (`python -m tools.chaos`, what `make chaos` runs longer) as a test:
a full local cluster under a seeded nemesis for a dozen faults, then the checker's verdict.

The seed is random unless CHAOS_SEED is set; it is printed first, and a failure
names it, so `make chaos SEED=<seed> CYCLES=12` replays the same fault schedule.
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import subprocess
import sys

from pulsar_common import testing

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: One pass through every fault kind (disk-full included when run as root), and one more.
CYCLES = 12


def test_nothing_acknowledged_is_lost_under_a_short_chaos_run(tmp_path: pathlib.Path) -> None:
    seed = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))
    report_dir = tmp_path / "report"
    command = [sys.executable, "-m", "tools.chaos", "--cycles", str(CYCLES), "--seed", str(seed),
               "--data-dir", str(tmp_path / "data"),
               "--report-dir", str(report_dir)]
    process = subprocess.Popen(testing.dying_with_parent(command), cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        output, _ = process.communicate(timeout=270)
    finally:
        testing.stop_process(process)
    text = output.decode(errors="replace")
    assert (report_dir / "chaos-report.json").exists(), f"seed {seed}; no report:\n{text}"
    result = json.loads((report_dir / "chaos-report.json").read_text())
    verdict = f"seed {seed}:\n{text}\n{(report_dir / 'chaos-report.md').read_text()}"
    assert result["cycles"] == CYCLES, verdict
    assert result["lost"] == 0, verdict
    assert result["duplicates_with_dedup"] == 0, verdict
    assert result["order_violations"] == 0, verdict
    assert result["unexcused_subscription_regressions"] == 0, verdict
    assert result["unclosed_ledgers"] == [], verdict
    assert result["workload_errors"] == [], verdict
    assert result["acknowledged_sends"] > 1000, verdict
    assert set(result["faults_by_kind"]) >= {"kill-broker", "kill-bookie", "pause-broker",
                                             "etcd-leader", "relay-cut"}, verdict
    assert process.returncode == 0, verdict
