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


def test_an_invalid_setting_is_a_clear_error_not_a_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "pulsar_common.cli.main", "standalone", "--data-dir",
         str(tmp_path), "--conf", "subscriptionKeySharedConsistentHashingReplicaPoints=0"],
        capture_output=True, text=True,
    )
    assert result.returncode == 2
    assert "subscriptionKeySharedConsistentHashingReplicaPoints must be at least 1" in result.stderr
    assert "Traceback" not in result.stderr


def test_pulsar_version_prints_the_installed_release():
    import importlib.metadata

    out = subprocess.run(
        [sys.executable, "-m", "pulsar_common.cli.main", "version"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert f"Current version of pulsar is: {importlib.metadata.version('pulsar-py')}" in out
