"""Run `pulsar function-instance` as a real child process, for tests and benchmarks."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any, Self

from pulsar_common import testing


class InstanceProcess:
    """One instance process of the function whose config (function.json keys) is given."""

    def __init__(self, work_dir: pathlib.Path, function: dict[str, Any], instance_id: int = 0,
                 extra_arguments: list[str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.work_dir = work_dir
        self.function = function
        self.instance_id = instance_id
        self.metrics_port = testing.free_port()
        self.extra_arguments = extra_arguments or []
        self.env = env or {}
        self.config_path = work_dir / "function.json"
        self.log_path = work_dir / f"instance-{instance_id}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def arguments(self) -> list[str]:
        return [sys.executable, "-m", "pulsar_common.cli.main", "function-instance",
                "--config", str(self.config_path), "--instance-id", str(self.instance_id),
                "--metrics-port", str(self.metrics_port), "--metrics-host", "127.0.0.1",
                "--negative-ack-delay-ms", "100", *self.extra_arguments]

    def start(self, timeout_s: float = 60.0) -> Self:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.function))
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it until it exits
        self.process = subprocess.Popen(
            testing.dying_with_parent(self.arguments()), stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env})
        log.close()
        testing.wait_until(self.healthy, timeout_s, f"function instance (log {self.log_path})",
                           self.process)
        return self

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url("/healthz"), timeout=2) as reply:
                return int(reply.status) == 200
        except (OSError, urllib.error.URLError):
            return False

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.metrics_port}{path}"

    def get(self, path: str) -> bytes:
        with urllib.request.urlopen(self.url(path), timeout=10) as reply:
            return bytes(reply.read())

    def stats(self) -> Any:
        return json.loads(self.get("/stats"))

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> int | None:
        if self.process is None:
            return None
        testing.stop_process(self.process, timeout_s=20)
        return self.process.returncode

    def kill(self) -> None:
        if self.process is not None:
            testing.kill_process(self.process)


def receive_all(consumer: Any, count: int, timeout_ms: int = 20_000) -> list[Any]:
    """count messages from consumer (acknowledged), failing after timeout_ms without one."""
    messages = []
    for _ in range(count):
        message = consumer.receive(timeout_millis=timeout_ms)
        consumer.acknowledge(message)
        messages.append(message)
    return messages


def wait_for(condition: Any, timeout_s: float, what: str) -> None:
    """testing.wait_until for a condition that may raise while not yet true."""

    def holds() -> bool:
        try:
            return bool(condition())
        except (OSError, KeyError, ValueError):
            return False

    testing.wait_until(holds, timeout_s, what)


def multipart(fields: dict[str, tuple[str | None, bytes]]) -> tuple[bytes, str]:
    """(body, content type) of a multipart/form-data request: name -> (file name, bytes)."""
    boundary = "pulsar-functions-test-boundary"
    body = b""
    for name, (filename, data) in fields.items():
        disposition = f'form-data; name="{name}"'
        if filename:
            disposition += f'; filename="{filename}"'
        body += (f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
                 + data + b"\r\n")
    body += f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def http(method: str, url: str, body: bytes | None = None,
         content_type: str | None = None) -> tuple[int, bytes]:
    """(status, body) of one HTTP call; error statuses are returned, not raised."""
    headers = {"Content-Type": content_type} if content_type else {}
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return int(reply.status), bytes(reply.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


class WorkerProcess:
    """`pulsar functions-worker` on a free port, its records in the store metadata_url names."""

    def __init__(self, work_dir: pathlib.Path, metadata_url: str, service_url: str,
                 web_service_url: str, session_timeout_ms: int = 3000) -> None:
        self.work_dir = work_dir
        self.port = testing.free_port()
        self.overrides = {
            "configurationMetadataStoreUrl": metadata_url, "workerPort": str(self.port),
            "workerHostname": "127.0.0.1", "bindAddress": "127.0.0.1",
            "pulsarServiceUrl": service_url, "pulsarWebServiceUrl": web_service_url,
            "downloadDirectory": str(work_dir / "functions"),
            "metadataStoreSessionTimeoutMillis": str(session_timeout_ms),
        }
        self.log_path = work_dir / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def worker_id(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> Self:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        args = [sys.executable, "-m", "pulsar_common.cli.main", "functions-worker"]
        for key, value in self.overrides.items():
            args += ["--conf", f"{key}={value}"]
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child owns it until it exits
        self.process = subprocess.Popen(
            testing.dying_with_parent(args), stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        log.close()
        testing.wait_until(lambda: testing.port_open(self.port), timeout_s,
                           f"functions worker (log {self.log_path})", self.process)
        return self

    def json(self, method: str, path: str) -> Any:
        status, body = http(method, self.url + path)
        assert status == 200, (status, body)
        return json.loads(body)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self) -> None:
        if self.process is not None:
            testing.stop_process(self.process, timeout_s=30)

    def kill(self) -> None:
        if self.process is not None:
            testing.kill_process(self.process)
