"""The process runtime: each function instance this worker runs is a `pulsar function-instance`
child process, restarted when it exits on its own.

An instance is described by an InstanceSpec (its function.json text, the
code's bytes and file name, the restart epoch). Applying a spec that differs
from the running one restarts the process; a crash restarts it after a
backoff that grows with consecutive crashes. Every child gets its own
metrics port, and stops when the worker dies (instance/cli.py asks the
kernel for that, told the worker's pid through PULSAR_FUNCTIONS_WORKER_PID).
On a secured cluster every child reads the worker's broker client settings
(credentials, TLS trust) from a client.conf only the worker's user can read
(`--client-conf`), never from its command line.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import pathlib
import signal
import sys
from collections.abc import Callable

from pulsar_common import testing

from pulsar_functions import broker_client

log = logging.getLogger(__name__)

#: Backoff before restarting a crashed instance: first, factor, cap.
RESTART_BACKOFF_FIRST_S = 0.5
RESTART_BACKOFF_MAX_S = 30.0
#: Tells an instance which process to die with. No preexec_fn does it here: the worker's
#: gRPC threads (etcd) make running Python between fork and exec crash the child.
PARENT_PID_ENV = "PULSAR_FUNCTIONS_WORKER_PID"
#: How long a stopping instance may take before SIGKILL.
STOP_TIMEOUT_S = 20.0
#: The instances' broker client settings, in the worker's data directory.
CLIENT_CONF_FILE = "client.conf"


@dataclasses.dataclass(frozen=True)
class InstanceSpec:
    fqfn: str
    instance_id: int
    config_json: str
    code: bytes | None
    code_filename: str | None
    restart_epoch: int


@dataclasses.dataclass
class InstanceProcess:
    spec: InstanceSpec
    metrics_port: int
    restarts: int = 0
    last_error: str = ""
    process: asyncio.subprocess.Process | None = None
    supervisor: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None


class ProcessRuntime:
    def __init__(self, data_dir: pathlib.Path, metrics_host: str,
                 on_change: Callable[[], None] = lambda: None,
                 client: broker_client.BrokerClientSettings = broker_client.ANONYMOUS) -> None:
        """on_change is called whenever an instance process starts or exits; client is how
        instances connect to brokers."""
        self._on_change = on_change
        self._client = client
        self._client_conf: pathlib.Path | None = None
        self._data_dir = data_dir
        self._metrics_host = metrics_host
        self.instances: dict[tuple[str, int], InstanceProcess] = {}

    def instance_dir(self, spec: InstanceSpec) -> pathlib.Path:
        return self._data_dir / spec.fqfn / str(spec.instance_id)

    async def apply(self, spec: InstanceSpec) -> None:
        """Run the instance as spec says (start it, or restart it when spec changed)."""
        key = (spec.fqfn, spec.instance_id)
        current = self.instances.get(key)
        if current is not None and current.spec == spec:
            return
        if current is not None:
            await self.stop(spec.fqfn, spec.instance_id)
        self._write_files(spec)
        instance = InstanceProcess(spec, testing.free_port(self._metrics_host))
        if current is not None:
            instance.restarts = current.restarts
        self.instances[key] = instance
        instance.supervisor = asyncio.create_task(self._supervise(instance))

    def _client_conf_path(self) -> pathlib.Path | None:
        """The instances' client.conf, written (owner-only) on first use; None when the
        instances connect without credentials or TLS trust settings."""
        if self._client == broker_client.ANONYMOUS:
            return None
        if self._client_conf is None:
            path = self._data_dir / CLIENT_CONF_FILE
            self._client.write_private(path)
            self._client_conf = path
        return self._client_conf

    def _write_files(self, spec: InstanceSpec) -> None:
        directory = self.instance_dir(spec)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "function.json").write_text(spec.config_json)
        if spec.code is not None and spec.code_filename:
            (directory / spec.code_filename).write_bytes(spec.code)

    async def _supervise(self, instance: InstanceProcess) -> None:
        backoff = RESTART_BACKOFF_FIRST_S
        while True:
            started = asyncio.get_running_loop().time()
            instance.process = await self._spawn(instance)
            self._on_change()
            code = await instance.process.wait()
            self._on_change()
            instance.last_error = f"exited with status {code}"
            instance.restarts += 1
            log.warning("instance %s:%d %s; restarting", instance.spec.fqfn,
                        instance.spec.instance_id, instance.last_error)
            if asyncio.get_running_loop().time() - started > RESTART_BACKOFF_MAX_S:
                backoff = RESTART_BACKOFF_FIRST_S
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, RESTART_BACKOFF_MAX_S)

    async def _spawn(self, instance: InstanceProcess) -> asyncio.subprocess.Process:
        directory = self.instance_dir(instance.spec)
        arguments = [sys.executable, "-m", "pulsar_common.cli.main", "function-instance",
                     "--config", str(directory / "function.json"),
                     "--instance-id", str(instance.spec.instance_id),
                     "--metrics-port", str(instance.metrics_port),
                     "--metrics-host", self._metrics_host]
        client_conf = self._client_conf_path()
        if client_conf is not None:
            arguments += ["--client-conf", str(client_conf)]
        log_file = open(directory / "instance.log", "ab")  # noqa: SIM115, ASYNC230 (local, tiny)
        try:
            return await asyncio.create_subprocess_exec(
                *arguments, stdout=log_file, stderr=asyncio.subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1", PARENT_PID_ENV: str(os.getpid())})
        finally:
            log_file.close()

    async def stop(self, fqfn: str, instance_id: int) -> None:
        instance = self.instances.pop((fqfn, instance_id), None)
        if instance is None:
            return
        if instance.supervisor is not None:
            instance.supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await instance.supervisor
        process = instance.process
        if process is None or process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()

    async def stop_all(self) -> None:
        await asyncio.gather(*(self.stop(fqfn, i) for fqfn, i in list(self.instances)))
