"""Bookies for tests and local clusters: as a child process (`BookieProcess`) or in this process.

A BookieProcess runs `python -m pulsar_bookie.cli --config <data_dir>/bookkeeper.conf`
on loopback with free ports, waits until `/api/v1/bookie/is_ready` answers
200, and is stopped by pid: SIGTERM for a clean stop, SIGKILL for a crash.
Its output goes to <data_dir>/bookie.log. It can be started again on the
same directories and ports (a restart after a crash).

`running_bookie(conf)` is the in-process equivalent, an async context manager
around BookieService. `AutoRecoveryProcess` runs `pulsar autorecovery` the same
way (ready once /heartbeat answers).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Mapping
from typing import IO, Self

from pulsar_common import testing

from pulsar_bookie import config as bookie_config
from pulsar_bookie import types
from pulsar_bookie.service import bookie

#: How long start() waits for readiness (a loaded CI machine replaying a journal).
START_TIMEOUT_S = 60.0


def local_settings(
    data_dir: str | pathlib.Path,
    *,
    port: int,
    http_port: int,
    metadata_url: str = "",
    sync: bool = True,
) -> dict[str, str]:
    """bookkeeper.conf settings of a loopback bookie with its data under data_dir."""
    data = pathlib.Path(data_dir)
    return {
        "bookiePort": str(port),
        "bookieBindAddress": "127.0.0.1",
        "advertisedAddress": "127.0.0.1",
        "httpServerHost": "127.0.0.1",
        "httpServerPort": str(http_port),
        "journalDirectories": str(data / "journal"),
        "ledgerDirectories": str(data / "ledgers"),
        "journalSyncData": "true" if sync else "false",
        "metadataServiceUri": metadata_url,
        "zkTimeout": "4000",
        "diskCheckInterval": "500",
        "dbStorage_writeCacheMaxSizeMb": "16",
        "dbStorage_readAheadCacheMaxSizeMb": "8",
    }


class BookieProcess:
    """One `pulsar bookie` child process on loopback."""

    def __init__(
        self,
        data_dir: str | pathlib.Path,
        *,
        metadata_url: str = "",
        port: int | None = None,
        http_port: int | None = None,
        overrides: Mapping[str, str] | None = None,
        sync: bool = True,
    ) -> None:
        self.data_dir = pathlib.Path(data_dir)
        self.port = port or testing.free_port()
        self.http_port = http_port or testing.free_port()
        self.settings = local_settings(
            self.data_dir, port=self.port, http_port=self.http_port,
            metadata_url=metadata_url, sync=sync,
        )
        self.settings.update(overrides or {})
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def bookie_id(self) -> types.BookieId:
        return types.BookieId(f"127.0.0.1:{self.port}")

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    @property
    def config_path(self) -> pathlib.Path:
        return self.data_dir / "bookkeeper.conf"

    @property
    def log_path(self) -> pathlib.Path:
        return self.data_dir / "bookie.log"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "pulsar_bookie.cli", "--config", str(self.config_path)]

    def launch(self) -> subprocess.Popen[bytes]:
        """Start the process without waiting for readiness."""
        if self.process is not None and self.process.poll() is None:
            raise RuntimeError(f"bookie {self.bookie_id} is already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.settings.items()))
        self._close_log()
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - kept open for the child
        self.process = subprocess.Popen(
            testing.dying_with_parent(self.command()), stdout=self._log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        return self.process

    def start(self, timeout_s: float = START_TIMEOUT_S) -> Self:
        """Start and wait until the bookie is ready (RuntimeError if it exits first)."""
        self.launch()
        return self.wait_ready(timeout_s)

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> Self:
        """Wait for readiness of a launched bookie (launch several, then wait for each)."""
        process = self.process
        assert process is not None, "launch() first"
        try:
            testing.wait_until(self.is_ready, timeout_s, f"bookie {self.bookie_id}", process)
        except (RuntimeError, TimeoutError) as exc:
            self.kill()
            raise RuntimeError(f"{exc}; log:\n{self.log_tail()}") from exc
        return self

    def wait_exit(self, timeout_s: float = START_TIMEOUT_S) -> int:
        """Wait for the process to end by itself (a start refused); its exit code."""
        assert self.process is not None
        return self.process.wait(timeout_s)

    def is_ready(self) -> bool:
        return self.http_get("/api/v1/bookie/is_ready")[0] == 200

    def http_get(self, path: str) -> tuple[int, bytes]:
        """(status, body) of a GET on the bookie's HTTP port; (0, b"") when unreachable."""
        return self.http("GET", path)

    def http(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """(status, body) of a request on the bookie's HTTP port; (0, b"") when unreachable."""
        request = urllib.request.Request(self.http_url + path, data=body, method=method)
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as exc:
            return int(exc.code), bytes(exc.read())
        except (urllib.error.URLError, OSError):
            return 0, b""

    def stop(self, timeout_s: float = 30.0) -> int | None:
        """SIGTERM (clean shutdown), SIGKILL if it does not end in time; the exit code."""
        if self.process is not None:
            testing.stop_process(self.process, timeout_s)
        self._close_log()
        return None if self.process is None else self.process.returncode

    def kill(self) -> None:
        """SIGKILL: what a crash looks like to clients and storage."""
        if self.process is not None:
            testing.kill_process(self.process)
        self._close_log()

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class AutoRecoveryProcess(BookieProcess):
    """One `pulsar autorecovery` child process (auditor candidate and replication worker),
    configured with the bookies' settings file under data_dir."""

    def command(self) -> list[str]:
        return [sys.executable, "-m", "pulsar_bookie.autorecovery.cli",
                "--config", str(self.config_path)]

    @property
    def log_path(self) -> pathlib.Path:
        return self.data_dir / "autorecovery.log"

    def is_ready(self) -> bool:
        return self.http_get("/heartbeat")[0] == 200


@contextlib.asynccontextmanager
async def running_bookie(conf: bookie_config.BookieConfig) -> AsyncIterator[bookie.BookieService]:
    """A started BookieService in this process, stopped on exit."""
    service = bookie.BookieService(conf)
    await service.start()
    try:
        yield service
    finally:
        await service.stop()


def local_config(
    data_dir: str | pathlib.Path,
    *,
    port: int = 0,
    http_port: int = 0,
    metadata_url: str = "",
    sync: bool = True,
    **overrides: str,
) -> bookie_config.BookieConfig:
    """A BookieConfig for an in-process loopback bookie (port 0: any free port, when
    unregistered)."""
    from pulsar_common import config as common_config

    settings = local_settings(
        data_dir, port=port, http_port=http_port, metadata_url=metadata_url, sync=sync
    )
    settings.update(overrides)
    return common_config.load(bookie_config.BookieConfig, None, settings)
