"""`python -m tools.fuzz` (what `make fuzz` runs) on a small budget: it starts its own
standalone and proxy, attacks both, and reports them up, within their memory limit, and
the witnesses on their first connections."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

from pulsar_common import testing

ROOT = pathlib.Path(__file__).resolve().parents[4]


def test_a_short_long_run_reports_both_processes_up(tmp_path: pathlib.Path) -> None:
    command = [sys.executable, "-m", "tools.fuzz", "--frames", "3000", "--max-seconds", "60",
               "--seed", "7", "--report-dir", str(tmp_path)]
    process = subprocess.Popen(testing.dying_with_parent(command), cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        output, _ = process.communicate(timeout=180)
    finally:
        testing.stop_process(process)
    text = output.decode(errors="replace")
    result = json.loads((tmp_path / "fuzz-report.json").read_text())
    assert result["frames"] >= 3000 or result["seconds"] >= 60, text
    assert result["broker_up"] and result["proxy_up"], text
    assert result["failures"] == [], text
    assert result["witness_connections_kept"] == {"broker": True, "proxy": True}, text
    assert set(result["peak_rss_mib"]) == {"broker", "proxy"}, text
    assert process.returncode == 0, text
    assert (tmp_path / "fuzz-report.md").exists()
