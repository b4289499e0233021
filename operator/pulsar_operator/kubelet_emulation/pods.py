"""The kubelet's part for one pod: volumes, init containers, containers, and the pod's status.

A `PodRunner` lives as long as one pod object (one uid): it has the pod's
address for its whole life (a container restart keeps it, a new pod with
the same name gets a new one), a scratch directory that is the containers'
working directory and HOME, and one log file per pod name that every
container of every incarnation appends to (`<namespace>_<pod>.log`).
"""

from __future__ import annotations

import asyncio
import logging
import pathlib
import signal
from typing import Any

from pulsar_operator.kubelet_emulation import containers, podspec, tasks, volumes

log = logging.getLogger(__name__)
HOST_IP = "127.0.0.1"


class PodRunner:
    def __init__(self, pod: dict[str, Any], ip: str, state_dir: pathlib.Path, claims: volumes.ClaimStore,
                 node: containers.Node) -> None:
        meta = pod["metadata"]
        self.pod = pod
        self.ip = ip
        self.namespace = str(meta.get("namespace") or "default")
        self.name = str(meta["name"])
        self.uid = str(meta.get("uid") or "")
        self.node = node
        self.dir = state_dir / "pods" / self.namespace / f"{self.name}-{self.uid[:8]}"
        self.log_path = state_dir / "logs" / f"{self.namespace}_{self.name}.log"
        self.volumes = volumes.PodVolumes(pod, self.dir, claims, node.lookup)
        spec = pod.get("spec") or {}
        self.restart_policy = str(spec.get("restartPolicy") or "Always")
        self.grace_s = float(spec.get("terminationGracePeriodSeconds", 30))
        self.init_containers = [self._container(c) for c in spec.get("initContainers") or []]
        self.containers = [self._container(c) for c in spec.get("containers") or []]
        self.phase = "Pending"
        self.initialized = not self.init_containers
        self.start_time = containers.now_iso()
        self.volume_problem = ""
        self._transitions: dict[str, tuple[str, str]] = {}
        self._task: asyncio.Task[None] | None = None
        self.stopped = asyncio.Event()

    def _container(self, spec: dict[str, Any]) -> containers.Container:
        return containers.Container(spec, self.pod, self.ip, self.dir, self.log_path, self.volumes, self.node)

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._task = asyncio.create_task(self._run(), name=f"pod {self.namespace}/{self.name}")

    async def _run(self) -> None:
        try:
            await self._lifecycle()
        except Exception:  # a harness bug: say so in the pod's status and the test's log
            log.exception("pod %s/%s failed in the harness", self.namespace, self.name)
            self.phase = "Failed"
            self.node.on_change()

    async def _lifecycle(self) -> None:
        while True:
            try:
                self.volumes.prepare()
                break
            except podspec.ConfigError as exc:
                if str(exc) != self.volume_problem:
                    self.volume_problem = str(exc)
                    self.node.on_change()
                await asyncio.sleep(containers.CONFIG_RETRY_S)
        self.volume_problem = ""
        for init in self.init_containers:
            await init.run(self.restart_policy, until_success=True)
        self.initialized = True
        self.phase = "Running"
        self.node.on_change()
        codes = await asyncio.gather(*(c.run(self.restart_policy) for c in self.containers))
        self.phase = "Succeeded" if all(code == 0 for code in codes) else "Failed"
        self.node.on_change()

    def refresh(self) -> None:
        self.volumes.refresh()

    def kill(self, signum: int = signal.SIGKILL) -> None:
        """Signal every container's process group (SIGKILL: what a node failure does to them)."""
        for container in self.init_containers + self.containers:
            container.signal(signum)

    def process_groups(self) -> list[int]:
        return [c.proc.pid for c in self.init_containers + self.containers if c.proc and c.proc.returncode is None]

    async def stop(self, grace_s: float | None = None) -> None:
        """Terminate the pod: SIGTERM, then SIGKILL after the grace period."""
        await tasks.cancel_and_wait(self._task)
        grace = self.grace_s if grace_s is None else min(grace_s, self.grace_s)
        await asyncio.gather(*(c.terminate(grace) for c in self.init_containers + self.containers))
        self.stopped.set()

    def _condition(self, kind: str, ok: bool, reason: str = "") -> dict[str, Any]:
        status = "True" if ok else "False"
        previous = self._transitions.get(kind)
        if previous is None or previous[0] != status:
            self._transitions[kind] = previous = (status, containers.now_iso())
        result = {"type": kind, "status": status, "lastProbeTime": None, "lastTransitionTime": previous[1]}
        if reason and not ok:
            result["reason"] = reason
        return result

    def status(self) -> dict[str, Any]:
        """The pod's status as the kubelet reports it."""
        ready = self.phase == "Running" and all(c.ready for c in self.containers)
        status: dict[str, Any] = {
            "phase": self.phase, "hostIP": HOST_IP, "hostIPs": [{"ip": HOST_IP}],
            "podIP": self.ip, "podIPs": [{"ip": self.ip}], "startTime": self.start_time, "qosClass": "BestEffort",
            "conditions": [
                self._condition("PodScheduled", True),
                self._condition("Initialized", self.initialized, "ContainersNotInitialized"),
                self._condition("ContainersReady", ready, "ContainersNotReady"),
                self._condition("Ready", ready, "ContainersNotReady"),
            ],
            "containerStatuses": [self._container_status(c) for c in self.containers],
        }
        if self.init_containers:
            status["initContainerStatuses"] = [self._container_status(c) for c in self.init_containers]
        return status

    def _container_status(self, container: containers.Container) -> dict[str, Any]:
        result = container.status()
        if self.volume_problem and "waiting" in result["state"]:
            result["state"] = {"waiting": {"reason": "ContainerCreating", "message": self.volume_problem}}
        return result
