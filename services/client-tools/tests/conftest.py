"""Run `pulsar-client` and `pulsar-perf` as real subprocesses against the session's standalone
(the `standalone`, `client` and `topic` fixtures come from the root conftest)."""

from __future__ import annotations

import subprocess
import sys
import uuid
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
        return _run("pulsar_client_tools.client.main", "--url", standalone.service_url, *args)

    return run


@pytest.fixture
def pulsar_perf(standalone) -> Runner:
    """`pulsar-perf <produce|consume> -u <standalone> ...`"""

    def run(command: str, *args: str) -> subprocess.CompletedProcess[str]:
        return _run("pulsar_client_tools.perf.main", command, "-u", standalone.service_url, *args)

    return run


@pytest.fixture
def unique() -> str:
    """A short random suffix for tenant and namespace names."""
    return uuid.uuid4().hex[:10]
