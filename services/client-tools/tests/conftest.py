"""Run `pulsar-client`, `pulsar-perf` and `pulsar-admin` as real subprocesses against the
session's standalone (the `standalone`, `client` and `topic` fixtures come from the root
conftest)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator

import pytest
from pulsar_broker import testing as broker_testing

CLI_TIMEOUT_S = 90.0
#: How long a tool may take to print its summary and exit after Ctrl-C.
CTRL_C_TIMEOUT_S = 60.0

Runner = Callable[..., subprocess.CompletedProcess[str]]


def _run(
    module: str, *args: str, timeout_s: float = CLI_TIMEOUT_S, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


class Admin:
    """`pulsar-admin ...` with PULSAR_ADMIN_URL set to a broker's web service URL."""

    def __init__(self, web_url: str) -> None:
        self.env = {**os.environ, "PULSAR_ADMIN_URL": web_url}

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return _run("pulsar_client_tools.admin.main", *args, timeout_s=60, env=self.env)

    def ok(self, *args: str) -> str:
        result = self(*args)
        assert result.returncode == 0, result.stderr
        return result.stdout


class Background:
    """Tools a test starts, lets run and stops with Ctrl-C; any still running at teardown are killed."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, module: str, *args: str) -> subprocess.Popen[str]:
        # A run started in the background (nohup, `&` in a script) ignores SIGINT, and an
        # ignored signal stays ignored across exec: Python would then never raise
        # KeyboardInterrupt in the tool. A handler (unlike SIG_IGN) is reset to the default
        # at exec, so the tool starts with SIGINT as a terminal would give it.
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        try:
            proc = subprocess.Popen([sys.executable, "-m", module, *args],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        finally:
            signal.signal(signal.SIGINT, previous)
        self.procs.append(proc)
        return proc

    @staticmethod
    def ctrl_c(proc: subprocess.Popen[str]) -> str:
        """SIGINT, then the tool's whole output once it exited."""
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=CTRL_C_TIMEOUT_S)
        return out

    def kill(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.fixture
def background() -> Iterator[Background]:
    running = Background()
    try:
        yield running
    finally:
        running.kill()


@pytest.fixture
def run_module() -> Runner:
    """`python -m <module> ...`, against no broker unless told (usage errors)."""
    return _run


@pytest.fixture
def admin(standalone: broker_testing.StandaloneProcess) -> Admin:
    """`pulsar-admin ...` against the standalone."""
    return Admin(standalone.web_url)


@pytest.fixture
def admin_at() -> Callable[[str], Admin]:
    """`pulsar-admin ...` against any admin URL."""
    return Admin


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
