"""A standalone of its own for the tests of connection limits and backpressure, which
measure the broker process (memory, file descriptors) and so must not share it."""

from __future__ import annotations

import pathlib
import time
from collections.abc import Callable, Iterator

import pytest
from pulsar_broker import testing as broker_testing

#: Settings of the standalone under test (the tests' constants repeat them).
OVERRIDES = {
    "journalSyncData": "false",
    "maxHttpServerConnections": "50",
    "httpServerIdleTimeoutMillis": "2000",
    "brokerMaxConnectionsPerIp": "20",
    "keepAliveIntervalSeconds": "5",
}


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        broker_testing.StandaloneProcess]:
    process = broker_testing.StandaloneProcess(
        tmp_path_factory.mktemp("limits") / "data", OVERRIDES)
    process.start()
    yield process
    process.stop()


class Probe:
    """Reads the standalone's process from /proc, and waits on conditions with deadlines."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def rss_bytes(self) -> int:
        for line in pathlib.Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError(f"no VmRSS for {self.pid}")

    def open_fds(self) -> int:
        return len(list(pathlib.Path(f"/proc/{self.pid}/fd").iterdir()))

    @staticmethod
    def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f"{what}: not within {timeout_s} s"
            time.sleep(0.05)

    @staticmethod
    def settled(read: Callable[[], int], quiet_s: float = 1.0, timeout_s: float = 20.0) -> int:
        """read() once it has not changed for quiet_s (something stopped happening)."""
        deadline = time.monotonic() + timeout_s
        value, since = read(), time.monotonic()
        while time.monotonic() - since < quiet_s:
            assert time.monotonic() < deadline, f"still changing after {timeout_s} s: {value}"
            time.sleep(0.1)
            current = read()
            if current != value:
                value, since = current, time.monotonic()
        return value


@pytest.fixture
def probe(standalone: broker_testing.StandaloneProcess) -> Probe:
    return Probe(standalone.pid)
