"""Security settings that cannot work stop `pulsar standalone` at start-up with a clear
message, instead of a broker that silently lets everyone in or no one."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
from pulsar_common import testing


@pytest.mark.parametrize("settings,message", [
    ({"authenticationProviders": "com.example.CustomProvider"},
     "unknown authentication provider"),
    ({"authenticationProviders":
      "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"},
     "needs tokenSecretKey or tokenPublicKey"),
])
def test_unusable_security_settings_stop_start_up(tmp_path: pathlib.Path,
                                                  settings: dict[str, str],
                                                  message: str) -> None:
    overrides = {"authenticationEnabled": "true", **settings,
                 "brokerServicePort": str(testing.free_port()),
                 "webServicePort": str(testing.free_port()),
                 "bookiePort": str(testing.free_port()), "bindAddress": "127.0.0.1"}
    arguments = [sys.executable, "-m", "pulsar_common.cli.main", "standalone",
                 "--data-dir", str(tmp_path / "data"), "--no-functions-worker"]
    for key, value in overrides.items():
        arguments += ["--conf", f"{key}={value}"]
    done = subprocess.run(testing.dying_with_parent(arguments), capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert message in done.stderr
