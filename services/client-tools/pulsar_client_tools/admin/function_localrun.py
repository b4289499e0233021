"""`pulsar-admin functions localrun`: run a function's instances here, in the foreground,
against any cluster, without a functions worker.

Each instance is a `pulsar function-instance` child process (the runtime a
worker runs), its log on this terminal. The function's config goes to a
temporary directory; the code is used where it is (a `--py` file) or fetched
by the instance (a URL). An instance that exits with an error starts again
after a backoff that grows, as under a worker; one that exits with status 2
(its config is wrong) ends the run with that status. Ctrl-C or SIGTERM stops
the instances gracefully (a second one kills them); if localrun itself dies,
the kernel stops them.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import pathlib
import select
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from pulsar_client_tools.admin import client, function_config

DEFAULT_SERVICE_URL = "pulsar://localhost:6650"
#: How often the supervisor looks at its instance processes.
POLL_INTERVAL_S = 0.2
#: Backoff before starting a failed instance again: first, doubled, cap.
RESTART_BACKOFF_FIRST_S = 0.5
RESTART_BACKOFF_MAX_S = 30.0
#: How long a stopping instance may take before SIGKILL.
STOP_TIMEOUT_S = 20.0
#: The status `pulsar function-instance` exits with when its config is wrong: no retry helps.
CONFIG_ERROR_STATUS = 2
#: Names the process an instance dies with (see pulsar_functions.instance.cli.die_with_worker).
PARENT_PID_ENV = "PULSAR_FUNCTIONS_WORKER_PID"
#: Apache's secrets provider classes -> `pulsar function-instance --secrets-provider`.
SECRETS_PROVIDERS = {"ClearTextSecretsProvider": "cleartext",
                     "EnvironmentBasedSecretsProvider": "environment"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    function_config.add_config_arguments(parser)
    parser.add_argument("--instances", dest="fc_parallelism", type=int,
                        help="how many instances run here (same as --parallelism)")
    parser.add_argument("--broker-service-url", "--brokerServiceUrl", dest="broker_service_url",
                        help=f"the cluster's service URL (default {DEFAULT_SERVICE_URL})")
    parser.add_argument("--web-service-url", help="the cluster's web service URL")
    parser.add_argument("--instance-id-offset", "--instanceIdOffset", dest="instance_id_offset",
                        type=int, default=0, help="the first instance's id (default 0)")
    parser.add_argument("--metrics-port-start", type=int, default=None,
                        help="metrics port of the first instance, the next ones follow "
                        "(default: free ports)")
    parser.add_argument("--secrets-provider-classname", default="ClearTextSecretsProvider",
                        help="ClearTextSecretsProvider (default: a secret's value is in "
                        "--secrets) or EnvironmentBasedSecretsProvider")
    parser.add_argument("--state-storage-service-url", "--stateStorageServiceUrl",
                        help=argparse.SUPPRESS)


@dataclasses.dataclass
class LocalInstance:
    """One instance process, and when to start it again after it failed."""

    instance_id: int
    arguments: list[str]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restart_at: float | None = None
    backoff_s: float = RESTART_BACKOFF_FIRST_S


class LocalRun:
    def __init__(self, instances: list[LocalInstance], env: dict[str, str]) -> None:
        self.instances = instances
        self._env = env

    def start(self, instance: LocalInstance, now: float) -> None:
        instance.process = subprocess.Popen(instance.arguments, env=self._env)
        instance.started_at = now
        instance.restart_at = None

    def step(self, now: float) -> int | None:
        """Start failed instances whose backoff is over; the run's exit status once it ends."""
        for instance in self.instances:
            if instance.restart_at is not None and now >= instance.restart_at:
                self.start(instance, now)
            code = None if instance.process is None else instance.process.poll()
            if code is None or instance.restart_at is not None or code == 0:
                continue
            if code == CONFIG_ERROR_STATUS:
                _say(f"instance {instance.instance_id} exited with status {code}: "
                     "its config is wrong")
                return code
            if now - instance.started_at > RESTART_BACKOFF_MAX_S:
                instance.backoff_s = RESTART_BACKOFF_FIRST_S
            _say(f"instance {instance.instance_id} exited with status {code}; starting it "
                 f"again in {instance.backoff_s:g} s")
            instance.restart_at = now + instance.backoff_s
            instance.backoff_s = min(instance.backoff_s * 2, RESTART_BACKOFF_MAX_S)
        if all(i.process is not None and i.process.poll() == 0 for i in self.instances):
            return 0
        return None

    def stop(self, signals: Signals) -> None:
        """SIGTERM every instance; SIGKILL those still running after STOP_TIMEOUT_S or after
        a second Ctrl-C."""
        running = [i.process for i in self.instances
                   if i.process is not None and i.process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while (any(p.poll() is None for p in running) and time.monotonic() < deadline
               and signals.received < 2):
            signals.wait(POLL_INTERVAL_S)
        for process in running:
            if process.poll() is None:
                process.kill()
            process.wait()


class Signals:
    """SIGINT and SIGTERM counted through a wakeup pipe: a Python signal handler runs between
    two bytecodes of the main thread, where taking a lock (threading.Event.set) can deadlock."""

    def __init__(self) -> None:
        self.received = 0
        self._read_fd, self._write_fd = os.pipe()
        for fd in (self._read_fd, self._write_fd):
            os.set_blocking(fd, False)
        self._previous_fd = signal.set_wakeup_fd(self._write_fd)
        self._previous = {sig: signal.signal(sig, lambda _signum, _frame: None)
                          for sig in (signal.SIGINT, signal.SIGTERM)}

    def wait(self, timeout_s: float) -> None:
        """Until a signal comes or timeout_s passes."""
        readable, _, _ = select.select([self._read_fd], [], [], timeout_s)
        if readable:
            with contextlib.suppress(BlockingIOError):
                self.received += len(os.read(self._read_fd, 64))

    def close(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._read_fd)
        os.close(self._write_fd)


def run(_admin: client.AdminClient, args: argparse.Namespace) -> None:
    document = function_config.build(args)
    function_config.check_complete(document)
    service_url = (args.broker_service_url or document.get("brokerServiceUrl")
                   or DEFAULT_SERVICE_URL)
    document["brokerServiceUrl"] = service_url
    if args.web_service_url:
        document["webServiceUrl"] = args.web_service_url
    if function_config.code_url(document) is None:
        document["py"] = str(pathlib.Path(str(document["py"])).resolve())
    with tempfile.TemporaryDirectory(prefix="pulsar-localrun-") as work:
        config_path = pathlib.Path(work) / "function.json"
        config_path.write_text(json.dumps(document))
        instances = _instances(args, document, config_path, service_url)
        _say(f"running {len(instances)} instance(s) of {document['tenant']}/"
             f"{document['namespace']}/{document['name']} on {service_url}; Ctrl-C stops them")
        status = _supervise(LocalRun(instances, {**os.environ, "PYTHONUNBUFFERED": "1",
                                                 PARENT_PID_ENV: str(os.getpid())}))
    if status:
        raise SystemExit(status)


def _instances(args: argparse.Namespace, document: dict[str, Any], config_path: pathlib.Path,
               service_url: str) -> list[LocalInstance]:
    count = int(document.get("parallelism") or 1)
    provider = next((name for suffix, name in SECRETS_PROVIDERS.items()
                     if args.secrets_provider_classname.endswith(suffix)), None)
    if provider is None:
        raise function_config.FunctionFlagError(
            f"unknown secrets provider {args.secrets_provider_classname}: use one of "
            f"{', '.join(SECRETS_PROVIDERS)}")
    instances = []
    for index in range(count):
        instance_id = args.instance_id_offset + index
        port = 0 if args.metrics_port_start is None else args.metrics_port_start + index
        instances.append(LocalInstance(instance_id, [
            sys.executable, "-m", "pulsar_common.cli.main", "function-instance",
            "--config", str(config_path), "--instance-id", str(instance_id),
            "--service-url", service_url, "--metrics-port", str(port),
            "--secrets-provider", provider,
            "--work-dir", str(config_path.parent / f"instance-{instance_id}")]))
    return instances


def _supervise(local_run: LocalRun) -> int:
    """Run the instances until a signal or their end; the exit status."""
    signals = Signals()
    status: int | None = None
    try:
        for instance in local_run.instances:
            local_run.start(instance, time.monotonic())
        while status is None and not signals.received:
            signals.wait(POLL_INTERVAL_S)
            status = local_run.step(time.monotonic())
    finally:
        if signals.received:
            _say("stopping the instances (Ctrl-C again kills them)")
        local_run.stop(signals)
        signals.close()
    return status or 0


def _say(text: str) -> None:
    print(f"localrun: {text}", file=sys.stderr, flush=True)
