"""Runs a real single-member etcd process on loopback.

Tests start one for the whole session, and `pulsar local-cluster` starts one
as the cluster's metadata store. The process is found by pid only: stop()
sends SIGTERM to that pid, then SIGKILL when it does not exit in time.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from typing import IO, Self

from pulsar_common import errors, testing

#: How long start() waits for the member to answer /health.
START_TIMEOUT_S = 60.0


@dataclasses.dataclass(frozen=True)
class EtcdServerTls:
    """etcd's client TLS flags: its certificate and key, and with client_cert_auth the CA
    client certificates must be signed by (--client-cert-auth --trusted-ca-file).
    client_cert/client_key are what the health check shows."""

    cert_file: str
    key_file: str
    trusted_ca_file: str
    client_cert_auth: bool = False
    client_cert: str = ""
    client_key: str = ""

    def arguments(self) -> list[str]:
        args = ["--cert-file", self.cert_file, "--key-file", self.key_file,
                "--trusted-ca-file", self.trusted_ca_file]
        return args + (["--client-cert-auth"] if self.client_cert_auth else [])

    def client_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.trusted_ca_file)
        if self.client_cert:
            context.load_cert_chain(self.client_cert, self.client_key)
        return context


class EtcdServer:
    """One etcd member (Debian etcd-server 3.4 flags) with its data in data_dir/data."""

    def __init__(
        self,
        data_dir: str | pathlib.Path,
        client_port: int | None = None,
        peer_port: int | None = None,
        *,
        binary: str = "etcd",
        host: str = "127.0.0.1",
        tls: EtcdServerTls | None = None,
    ) -> None:
        self.data_dir = pathlib.Path(data_dir)
        #: Serve clients over TLS (https://) with these files.
        self.tls = tls
        self.host = host
        self.client_port = client_port
        self.peer_port = peer_port
        self._binary = binary
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """The client URL, `http://host:port` (`https://` with tls)."""
        if self.client_port is None:
            raise RuntimeError("etcd has no client port until start()")
        scheme = "http" if self.tls is None else "https"
        return f"{scheme}://{self.host}:{self.client_port}"

    @property
    def url(self) -> str:
        """The metadata store URL for pulsar_common.metadata.factory.create_store."""
        return f"etcd:{self.endpoint}"

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def log_path(self) -> pathlib.Path:
        return self.data_dir / "etcd.log"

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self) -> None:
        """Start the member (ports chosen once, kept across restarts); wait until healthy."""
        if self.is_running():
            return
        binary = shutil.which(self._binary)
        if binary is None:
            raise errors.ConfigError(f"etcd binary {self._binary!r} not found on PATH")
        if self.client_port is None:
            self.client_port = testing.free_port(self.host)
        if self.peer_port is None:
            self.peer_port = testing.free_port(self.host)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (kept open while etcd runs)
        self._process = subprocess.Popen(
            testing.dying_with_parent([binary, *self._arguments()]),
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT,
        )
        try:
            testing.wait_until(self._healthy, START_TIMEOUT_S, f"etcd on {self.endpoint}",
                               self._process)
        except (TimeoutError, RuntimeError):
            self.stop()
            raise

    def stop(self, timeout_s: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after timeout_s; the pid is always reaped."""
        if self._process is not None:
            testing.stop_process(self._process, timeout_s)
            self._process = None
        self._close_log()

    def kill(self) -> None:
        """SIGKILL, the way a crash looks to clients."""
        if self._process is not None:
            testing.kill_process(self._process)
            self._process = None
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def _arguments(self) -> list[str]:
        client = self.endpoint
        peer = f"http://{self.host}:{self.peer_port}"
        return [
            "--name", "pulsar-etcd",
            "--data-dir", str(self.data_dir / "data"),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"pulsar-etcd={peer}",
            "--initial-cluster-state", "new",
            *([] if self.tls is None else self.tls.arguments()),
        ]

    def _healthy(self) -> bool:
        try:
            context = None if self.tls is None else self.tls.client_context()
            with urllib.request.urlopen(f"{self.endpoint}/health", timeout=2,
                                        context=context) as response:
                body = json.loads(response.read())
        except (OSError, urllib.error.URLError, ValueError):
            return False
        return bool(body.get("health") == "true")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
