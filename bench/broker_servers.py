"""Brokers under test for bench.broker_vs_lite: our `pulsar standalone` and pulsar-lite.

Both run as child processes on free loopback ports with a fresh data
directory, and are stopped by pid. `restart()` keeps the data, so that a
backlog is then read from storage rather than from a broker's memory.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from pulsar_common import testing

if TYPE_CHECKING:
    from pulsar_broker.testing import StandaloneProcess

LITE_START_TIMEOUT_S = 30.0
OURS_START_TIMEOUT_S = 90.0


class Broker(Protocol):
    @property
    def service_url(self) -> str: ...

    @property
    def pid(self) -> int: ...

    def restart(self) -> None: ...

    def stop(self) -> None: ...


@dataclass
class LiteBroker:
    """pulsar-lite (a Rust broker shipped as a binary inside its PyPI wheel), metrics off."""

    directory: pathlib.Path
    process: subprocess.Popen[bytes] | None = None
    port: int = 0

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> LiteBroker:
        from pulsar_lite import binary_finder  # only the benchmark needs pulsar-lite

        self.directory.mkdir(parents=True, exist_ok=True)
        config = self.directory / "pulsar-lite.toml"
        # Its metrics endpoint binds 0.0.0.0:8080 by default; the bench needs no metrics.
        config.write_text("[metrics]\nenabled = false\n")
        self.port = testing.free_port()
        args = [
            binary_finder.find_pulsar_lite_binary(),
            "--config",
            str(config),
            "--addr",
            f"127.0.0.1:{self.port}",
            "--db-path",
            str(self.directory / "db"),
            "--log-level",
            "warn",
        ]
        with open(self.directory / "pulsar-lite.log", "ab") as log:
            self.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, cwd=self.directory
            )
        testing.wait_until(
            lambda: testing.port_open(self.port), LITE_START_TIMEOUT_S, "pulsar-lite", self.process
        )
        return self

    def restart(self) -> None:
        self.stop()
        self.start()

    def stop(self) -> None:
        if self.process is not None:
            testing.stop_process(self.process)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used so far (from /proc)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def lite_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("pulsar-lite")
    except metadata.PackageNotFoundError:
        return "not installed"


@dataclass
class OursBroker:
    """Our `pulsar standalone`, through the broker's own test helper (free ports, readiness)."""

    process: StandaloneProcess

    @property
    def service_url(self) -> str:
        return self.process.service_url

    @property
    def pid(self) -> int:
        return self.process.pid

    def restart(self) -> None:
        self.process.stop()
        self.process.start(OURS_START_TIMEOUT_S)

    def stop(self) -> None:
        self.process.stop()


def start_ours(
    directory: pathlib.Path,
    journal_sync: bool,
    *,
    cpus: str | None = None,
    overrides: dict[str, str] | None = None,
) -> Broker:
    """Our standalone with journalSyncData on or off; its log goes next to the data dir.
    `cpus`: a taskset CPU list the standalone (and any child of it) is pinned to."""
    from pulsar_broker import testing as broker_testing

    class Pinned(broker_testing.StandaloneProcess):
        def arguments(self) -> list[str]:
            argv = super().arguments()
            return ["taskset", "-c", cpus, *argv] if cpus else argv

    directory.mkdir(parents=True, exist_ok=True)
    process = Pinned(
        directory / "data",
        {"journalSyncData": str(journal_sync).lower(), **(overrides or {})},
        log_path=directory / "standalone.log",
    )
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    return OursBroker(process.start(OURS_START_TIMEOUT_S))
