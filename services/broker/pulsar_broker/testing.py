"""Start a real `pulsar standalone` process on free ports, for tests and benchmarks."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from typing import TYPE_CHECKING

from pulsar_common import testing

if TYPE_CHECKING:
    import pulsar


class StandaloneProcess:
    """A `pulsar standalone` child process; stop() or kill() it by pid."""

    def __init__(self, data_dir: pathlib.Path, overrides: dict[str, str] | None = None,
                 log_path: pathlib.Path | None = None) -> None:
        self.data_dir = data_dir
        self.broker_port = testing.free_port()
        self.web_port = testing.free_port()
        self.bookie_port = testing.free_port()
        self.overrides = {
            "brokerServicePort": str(self.broker_port),
            "webServicePort": str(self.web_port),
            "bookiePort": str(self.bookie_port),
            "advertisedAddress": "127.0.0.1",
            "bindAddress": "127.0.0.1",
            **(overrides or {}),
        }
        self.log_path = log_path or data_dir.parent / f"{data_dir.name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def service_url(self) -> str:
        return f"pulsar://127.0.0.1:{self.broker_port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self, timeout_s: float = 60.0) -> StandaloneProcess:
        args = [sys.executable, "-m", "pulsar_common.cli.main", "standalone",
                "--data-dir", str(self.data_dir)]
        for key, value in self.overrides.items():
            args += ["--conf", f"{key}={value}"]
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it until it exits
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        testing.wait_until(self.ready, timeout_s, f"pulsar standalone (log {self.log_path})",
                           self.process)
        return self

    def ready(self) -> bool:
        """Both listeners accept connections; the web listener is the last thing started."""
        return testing.port_open(self.broker_port) and testing.port_open(self.web_port)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            testing.stop_process(self.process, timeout_s=20)

    def kill(self) -> None:
        if self.process is not None:
            testing.kill_process(self.process)


def receive_all(consumer: pulsar.Consumer, count: int, timeout_ms: int = 10_000,
                ack: bool = True) -> list[pulsar.Message]:
    messages = []
    for _ in range(count):
        msg = consumer.receive(timeout_millis=timeout_ms)
        messages.append(msg)
        if ack:
            consumer.acknowledge(msg)
    return messages


def nothing_more(consumer: pulsar.Consumer, timeout_ms: int = 300) -> bool:
    """True when no message arrives within timeout_ms."""
    import pulsar

    try:
        consumer.receive(timeout_millis=timeout_ms)
    except pulsar.Timeout:
        return True
    return False
