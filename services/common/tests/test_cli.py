"""The `pulsar` console script as a user meets it."""

from __future__ import annotations

import subprocess
import sys


def test_pulsar_help_lists_commands():
    out = subprocess.run(
        [sys.executable, "-m", "pulsar_common.cli.main", "--help"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert "usage: pulsar" in out
