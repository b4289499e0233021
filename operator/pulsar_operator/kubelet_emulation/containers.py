"""One container of a pod as a local process: start, probe, restart with backoff, stop.

The process runs `unshare --mount --uts` so that its bind mounts (the
cluster's hosts file over /etc/hosts, the pod's volumes over their
mountPaths) and its hostname are its own; it is the leader of its own
process group, so stopping or killing the container reaches everything it
started. Restarts follow the kubelet: the first waits `backoff_initial_s`
(10 s on a kubelet), each next one twice as long up to `backoff_max_s`, and
a container that ran `BACKOFF_RESET_S` without failing starts over.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import logging
import os
import pathlib
import shlex
import signal
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from pulsar_common import testing

from pulsar_operator.kubelet_emulation import podspec, probes, volumes

log = logging.getLogger(__name__)
BACKOFF_RESET_S = 600.0
#: How often a container waiting for a ConfigMap, Secret or claim looks again.
CONFIG_RETRY_S = 1.0
#: The signal a pod's processes get when the harness process dies, however it dies, so no pod
#: outlives a killed test run.
DEATH_SIGNAL = "KILL"


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def namespace_argv(hosts: pathlib.Path, mounts: list[volumes.Mount], hostname: str | None,
                   argv: list[str], workdir: str | None = None) -> list[str]:
    """argv run in its own mount (and UTS) namespace, with the cluster's name table and the mounts."""
    q = shlex.quote
    lines = ["set -e", f"mount --bind {q(str(hosts))} /etc/hosts"]
    for mount in mounts:
        source, target = q(str(mount.source)), q(mount.target)
        if mount.source.is_file():
            lines.append(f"mkdir -p {q(os.path.dirname(mount.target))}; [ -e {target} ] || : > {target}")
        else:
            lines.append(f"mkdir -p {source} {target}")
        lines.append(f"mount --bind {source} {target}")
        if mount.read_only:
            lines.append(f"mount -o remount,bind,ro {target}")
    if hostname:
        lines.append(f"hostname {q(hostname)}")
    if workdir:
        lines.append(f"mkdir -p {q(workdir)}; cd {q(workdir)}")
    lines.append('exec "$@"')
    flags = ["--mount", "--uts"] if hostname else ["--mount"]
    return ["unshare", *flags, "--", "/bin/sh", "-c", "\n".join(lines), "container", *argv]


@dataclasses.dataclass(frozen=True)
class Node:
    """What every container of the harness shares."""

    hosts: pathlib.Path
    path_env: str
    session: aiohttp.ClientSession
    lookup: podspec.Lookup
    on_change: Callable[[], None]
    backoff_initial_s: float
    backoff_max_s: float


class Container:
    def __init__(self, spec: dict[str, Any], pod: dict[str, Any], pod_ip: str, pod_dir: pathlib.Path,
                 log_path: pathlib.Path, pod_volumes: volumes.PodVolumes, node: Node) -> None:
        self.spec = spec
        self.name = str(spec.get("name"))
        self.pod = pod
        self.pod_ip = pod_ip
        self.pod_dir = pod_dir
        self.log_path = log_path
        self.volumes = pod_volumes
        self.node = node
        self.proc: asyncio.subprocess.Process | None = None
        self.restart_count = 0
        self.ready = False
        self.started = False
        self.state: dict[str, Any] = {"waiting": {"reason": "ContainerCreating"}}
        self.last_state: dict[str, Any] = {}
        self._probers: list[probes.Prober] = []
        self._backoff_s = node.backoff_initial_s

    @property
    def hostname(self) -> str:
        spec = self.pod.get("spec") or {}
        return str(spec.get("hostname") or self.pod["metadata"]["name"])[:63]

    def status(self) -> dict[str, Any]:
        return {"name": self.name, "image": self.spec.get("image") or "", "imageID": "",
                "containerID": f"harness://{self.proc.pid}" if self.proc else "",
                "ready": self.ready, "started": self.started, "restartCount": self.restart_count,
                "state": self.state, "lastState": self.last_state}

    def _set(self, **changes: Any) -> None:
        for key, value in changes.items():
            setattr(self, key, value)
        self.node.on_change()

    async def _spawn(self) -> asyncio.subprocess.Process:
        env = podspec.environment(self.spec, self.pod, self.pod_ip, self.node.lookup)
        argv = podspec.argv(self.spec, env)
        wrapped = namespace_argv(self.node.hosts, self.volumes.mounts(self.spec), self.hostname, argv,
                                 self.spec.get("workingDir"))
        full_env = {"PATH": self.node.path_env, "HOME": str(self.pod_dir), "HOSTNAME": self.hostname, **env}
        with self.log_path.open("ab") as out:
            out.write(f"\n=== {now_iso()} container {self.name} start #{self.restart_count}: "
                      f"{shlex.join(argv)}\n".encode())
            out.flush()
            return await asyncio.create_subprocess_exec(
                *testing.dying_with_parent(wrapped, DEATH_SIGNAL), env=full_env, cwd=self.pod_dir,
                stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)

    def _exec_argv(self, command: list[str]) -> list[str]:
        pid = self.proc.pid if self.proc else 0
        return ["nsenter", f"--target={pid}", "--mount", "--uts", "--", *command]

    def _start_probes(self) -> None:
        self._probers = []
        readiness, liveness = self.spec.get("readinessProbe"), self.spec.get("livenessProbe")
        if readiness:
            check = probes.checker(readiness, self.pod, self.pod_ip, self.node.session, self._exec_argv)
            self._probers.append(probes.Prober(readiness, False, check, lambda ok: self._set(ready=ok)))
        else:
            self._set(ready=True)
        if liveness:
            check = probes.checker(liveness, self.pod, self.pod_ip, self.node.session, self._exec_argv)
            self._probers.append(probes.Prober(liveness, True, check, self._on_liveness))
        for prober in self._probers:
            prober.start()

    def _on_liveness(self, ok: bool) -> None:
        if not ok:
            log.info("container %s of %s failed its liveness probe; restarting it", self.name,
                     self.pod["metadata"]["name"])
            self.signal(signal.SIGKILL)

    async def _stop_probes(self) -> None:
        for prober in self._probers:
            await prober.stop()
        self._probers = []

    async def run_once(self) -> int:
        """Start the process and wait for it to exit; its exit code (raises podspec.ConfigError)."""
        self.proc = await self._spawn()
        started_at = now_iso()
        self._set(state={"running": {"startedAt": started_at}}, started=True)
        self._start_probes()
        began = time.monotonic()
        code = await self.proc.wait()  # when cancelled, terminate() ends the process gracefully
        self.signal(signal.SIGKILL)  # whatever the process left behind in its group
        await self._stop_probes()
        if time.monotonic() - began >= BACKOFF_RESET_S:
            self._backoff_s = self.node.backoff_initial_s
        reason = "Completed" if code == 0 else ("Error" if code > 0 else f"Signal {-code}")
        self._set(ready=False, started=False, state={"terminated": {
            "exitCode": code if code >= 0 else 128 - code, "reason": reason,
            "startedAt": started_at, "finishedAt": now_iso()}})
        return code

    async def run(self, restart_policy: str, until_success: bool = False) -> int:
        """Run and restart as the policy says; init containers (`until_success`) end at exit 0."""
        while True:
            try:
                code = await self.run_once()
            except podspec.ConfigError as exc:
                self._set(state={"waiting": {"reason": "CreateContainerConfigError", "message": str(exc)}})
                await asyncio.sleep(CONFIG_RETRY_S)
                continue
            except OSError as exc:  # the wrapper could not be started at all
                log.error("container %s of %s could not start: %s", self.name, self.pod["metadata"]["name"], exc)
                self._set(state={"waiting": {"reason": "RunContainerError", "message": str(exc)}})
                await asyncio.sleep(self._backoff_s)
                continue
            if (until_success or restart_policy == "OnFailure") and code == 0 or restart_policy == "Never":
                return code
            delay, self._backoff_s = self._backoff_s, min(self._backoff_s * 2, self.node.backoff_max_s)
            self._set(last_state=self.state, restart_count=self.restart_count + 1,
                      state={"waiting": {"reason": "CrashLoopBackOff",
                                         "message": f"back-off {delay:g}s restarting failed container"}})
            await asyncio.sleep(delay)

    def signal(self, signum: int) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signum)

    async def terminate(self, grace_s: float) -> None:
        """SIGTERM the container, SIGKILL after grace_s; returns when the process is gone."""
        await self._stop_probes()
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        self.signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace_s):
                await proc.wait()
        self.signal(signal.SIGKILL)
        await proc.wait()
