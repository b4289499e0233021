"""Run `pulsar-client` and `pulsar-perf` as real subprocesses against the session's standalone."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

import pytest

CLI_TIMEOUT_S = 90.0

Runner = Callable[..., subprocess.CompletedProcess[str]]


def _run(
    module: str, *args: str, timeout_s: float = CLI_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


@pytest.fixture
def pulsar_client(standalone) -> Runner:
    """`pulsar-client --url <standalone> ...`"""

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return _run("pulsar_broker.client_cli.main", "--url", standalone.service_url, *args)

    return run


@pytest.fixture
def pulsar_perf(standalone) -> Runner:
    """`pulsar-perf <produce|consume> -u <standalone> ...`"""

    def run(command: str, *args: str) -> subprocess.CompletedProcess[str]:
        return _run("pulsar_broker.perf.main", command, "-u", standalone.service_url, *args)

    return run
