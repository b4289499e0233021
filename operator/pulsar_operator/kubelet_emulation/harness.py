"""`Harness`: one node's kubelet, kube-proxy, DNS and the controllers, against the API emulator.

    async with Harness(server_url, tmp_path) as cluster:
        ...                                   # kubectl apply; pods start as local processes
        await cluster.run(["pulsar-admin", ...])  # a command that resolves the cluster's names
        cluster.kill_pod("pulsar-mini-broker-0")  # SIGKILL, as a node failure does

One loop does the work, level-triggered like a controller: any watch event
or process change marks it dirty, and it then allocates Service addresses,
collects garbage, runs the StatefulSet controller, starts and stops pods and
reports their status, and rewrites the name table and the Service listeners.
It also runs every `RESYNC_S` seconds without an event. Pods run as root in
their own mount and UTS namespaces (it needs root, unshare, nsenter and
mount); securityContext, resources, affinity and images are not applied:
every container's command comes from this checkout (`pulsar` is the venv's).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import logging
import os
import pathlib
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable, Sequence
from typing import Any

import aiohttp
import yaml
from pulsar_common import testing

from pulsar_operator.kubelet_emulation import (
    api,
    containers,
    gc,
    kubelet,
    network,
    service_proxy,
    statefulsets,
    tasks,
)

log = logging.getLogger(__name__)
RESYNC_S = 2.0
#: Pause after a sync failed (the API server was unreachable, say) before the next one.
ERROR_PAUSE_S = 0.5
SYNC_TIMEOUT_S = 10.0
REQUIRED_TOOLS = ("unshare", "nsenter", "mount")
CRD_DIR = pathlib.Path(__file__).resolve().parents[3] / "crds"


class HarnessUnavailable(RuntimeError):
    """This machine cannot run the harness (not root, or a tool is missing)."""


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "the kubelet harness needs root (mount namespaces and bind mounts)"
    missing = [tool for tool in REQUIRED_TOOLS if shutil.which(tool) is None]
    return f"the kubelet harness needs {', '.join(missing)}" if missing else None


def custom_resources(crd_dir: pathlib.Path = CRD_DIR) -> list[api.Resource]:
    """The storage version of every CRD in crd_dir, so their objects can own children."""
    result = []
    for path in sorted(crd_dir.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                spec = doc["spec"]
                version = next((v for v in spec["versions"] if v.get("storage")), spec["versions"][0])
                result.append(api.Resource(f"{spec['group']}/{version['name']}", spec["names"]["plural"],
                                           spec["names"]["kind"]))
    return result


def default_path() -> str:
    return os.pathsep.join([os.path.dirname(sys.executable), "/usr/local/sbin", "/usr/local/bin",
                            "/usr/sbin", "/usr/bin", "/sbin", "/bin"])


class Harness:
    def __init__(self, server: str, state_dir: pathlib.Path, *, owners: Iterable[api.Resource] = (),
                 pod_cidr: str = network.POD_CIDR, service_cidr: str = network.SERVICE_CIDR,
                 backoff_initial_s: float = 10.0, backoff_max_s: float = 300.0) -> None:
        """`owners`: resources (beyond the built-in ones) whose objects may own others, e.g. custom_resources()."""
        self.state_dir = state_dir
        self.api = api.ApiClient(server)
        self._dirty = asyncio.Event()
        resources = list(api.BUILT_IN) + [r for r in owners if r not in api.BUILT_IN]
        self.caches = {r: api.Informer(self.api, r, self._dirty.set) for r in resources}
        self.hosts = network.HostsFile(self._mkdir(state_dir) / "hosts")
        self._cidrs = (pod_cidr, service_cidr)
        self._addresses: network.AddressBlock | None = None
        self._service_ips: dict[str, str] = {}  # Service uid -> address
        self._routes: dict[service_proxy.Listener, list[tuple[str, int]]] = {}
        self.proxy = service_proxy.ServiceProxy(lambda listener: self._routes.get(listener, []))
        self._backoff = (backoff_initial_s, backoff_max_s)
        self._session: aiohttp.ClientSession | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._loop_task: asyncio.Task[None] | None = None
        self._stopping = False
        self.kubelet: kubelet.Kubelet | None = None
        self.errors: list[str] = []

    @staticmethod
    def _mkdir(path: pathlib.Path) -> pathlib.Path:
        path.mkdir(parents=True, exist_ok=True)
        return path

    def _lookup(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        resource = {"ConfigMap": api.CONFIG_MAPS, "Secret": api.SECRETS, "PersistentVolumeClaim": api.CLAIMS}[kind]
        return self.caches[resource].get(namespace, name)

    async def start(self) -> Harness:
        if reason := unavailable_reason():
            raise HarnessUnavailable(reason)
        self._addresses = network.AddressBlock(*self._cidrs)
        self._session = aiohttp.ClientSession()
        node = containers.Node(hosts=self.hosts.path, path_env=default_path(), session=self._session,
                               lookup=self._lookup, on_change=self._dirty.set,
                               backoff_initial_s=self._backoff[0], backoff_max_s=self._backoff[1])
        self.kubelet = kubelet.Kubelet(self.api, self.caches[api.PODS], self.caches[api.CLAIMS], node,
                                       self.state_dir, self._addresses.pods)
        self.sets = statefulsets.StatefulSetController(
            self.api, self.caches[api.STATEFUL_SETS], self.caches[api.PODS], self.caches[api.CLAIMS],
            self.kubelet.terminating)
        self.gc = gc.GarbageCollector(self.api, self.caches)
        self._tasks = [asyncio.create_task(cache.run(), name=f"watch {r.plural}") for r, cache in self.caches.items()]
        async with asyncio.timeout(SYNC_TIMEOUT_S):
            await asyncio.gather(*(c.synced.wait() for c in self.caches.values()))
        self._loop_task = asyncio.create_task(self._loop(), name="harness sync")
        atexit.register(self.kill_all)
        return self

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop every pod (SIGTERM, SIGKILL after grace_s), the listeners and the watches."""
        self._stopping = True
        if self._loop_task is not None:  # first, so that nothing new starts
            await tasks.cancel_and_wait(self._loop_task)
        if self.kubelet is not None:
            await self.kubelet.shutdown(grace_s)
        self.kill_all()
        await self.proxy.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.api.close()
        if self._session is not None:
            await self._session.close()
        atexit.unregister(self.kill_all)
        if self._addresses is not None:
            self._addresses.release()

    async def __aenter__(self) -> Harness:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def kill_all(self) -> None:
        """SIGKILL every pod's process group at once (also at interpreter exit, whatever happened)."""
        for pgid in self.kubelet.process_groups() if self.kubelet else []:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    async def _loop(self) -> None:
        while not self._stopping:
            # asyncio.timeout, not wait_for: on 3.11 wait_for returns normally when it is cancelled
            # just as the event is set, and this loop would never stop.
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(RESYNC_S):
                    await self._dirty.wait()
            self._dirty.clear()
            try:
                await self.sync()
            except (aiohttp.ClientError, OSError) as exc:
                log.warning("harness sync failed: %s", exc)
                await asyncio.sleep(ERROR_PAUSE_S)
            except Exception as exc:  # a harness bug: keep serving, and let the test print it
                log.exception("harness sync failed")
                self.errors.append(repr(exc))
                await asyncio.sleep(ERROR_PAUSE_S)

    async def sync(self) -> None:
        assert self.kubelet is not None
        await self._allocate_service_ips()
        await self.gc.collect()
        self.kubelet.reap()
        for sts in self.caches[api.STATEFUL_SETS].items():
            if not sts["metadata"].get("deletionTimestamp"):
                await self.sets.sync(sts)
        await self.kubelet.sync()
        await self._sync_network()

    async def _allocate_service_ips(self) -> None:
        services = self.caches[api.SERVICES]
        for service in services.items():
            uid = str(service["metadata"].get("uid"))
            if network.is_headless(service) or uid in self._service_ips:
                continue
            assert self._addresses is not None
            ip = self._service_ips[uid] = self._addresses.services.allocate()
            if not (service.get("spec") or {}).get("clusterIP"):
                namespace, name = api.key_of(service)
                patched = await self.api.patch(api.SERVICES, namespace, name,
                                               {"spec": {"clusterIP": ip, "clusterIPs": [ip]}})
                if patched is not None:
                    services.upsert(patched)

    async def _sync_network(self) -> None:
        services = self.caches[api.SERVICES].items()
        pods = self.caches[api.PODS].items()
        cluster_ips = {api.key_of(s): self._service_ips[str(s["metadata"].get("uid"))] for s in services
                       if str(s["metadata"].get("uid")) in self._service_ips}
        self.hosts.write(network.render_hosts(network.name_table(services, pods, cluster_ips)))
        routes: dict[service_proxy.Listener, list[tuple[str, int]]] = {}
        by_name = {api.key_of(p): p for p in pods}
        for service in services:
            key = api.key_of(service)
            if key not in cluster_ips:
                continue
            members = network.endpoints(service, pods)
            for port in (service.get("spec") or {}).get("ports") or []:
                if str(port.get("protocol") or "TCP") != "TCP":
                    continue
                listener = service_proxy.Listener(cluster_ips[key], int(port["port"]), key[0], key[1],
                                                  str(port.get("name") or port["port"]))
                routes[listener] = self._targets(port, members, by_name, key[0])
        self._routes = routes
        await self.proxy.sync(set(routes))

    @staticmethod
    def _targets(port: dict[str, Any], members: list[network.Endpoint], pods: dict[api.Key, dict[str, Any]],
                 namespace: str) -> list[tuple[str, int]]:
        result = []
        for member in members:
            with contextlib.suppress(Exception):
                result.append((member.ip, network.target_port(port, pods[(namespace, member.pod)])))
        return result

    # What tests use.

    def _runner(self, name: str, namespace: str) -> Any:
        runner = self.kubelet.runners.get((namespace, name)) if self.kubelet else None
        if runner is None:
            raise KeyError(f"no running pod {namespace}/{name}")
        return runner

    def kill_pod(self, name: str, namespace: str = "default", signum: int = signal.SIGKILL) -> None:
        """Signal every process of a pod, as a node failure (SIGKILL) or an OOM kill would;
        the kubelet then restarts the containers with its backoff."""
        self._runner(name, namespace).kill(signum)

    def pod_ip(self, name: str, namespace: str = "default") -> str:
        return str(self._runner(name, namespace).ip)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """argv run with the cluster's name table as its /etc/hosts (like a process in a pod)."""
        return containers.namespace_argv(self.hosts.path, [], None, list(argv))

    async def run(self, argv: Sequence[str], timeout_s: float = 120.0,
                  env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run a command that resolves the cluster's names; its output, whatever its exit status."""
        proc = await asyncio.create_subprocess_exec(*testing.dying_with_parent(self.wrap(argv), containers.DEATH_SIGNAL), env=env,
                                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                    start_new_session=True)
        try:
            async with asyncio.timeout(timeout_s):
                out, err = await proc.communicate()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = await proc.communicate()
        code = proc.returncode if proc.returncode is not None else -1
        return subprocess.CompletedProcess(list(argv), code, out.decode(), err.decode())

    def logs(self, tail_bytes: int = 4000) -> str:
        """The end of every pod's log, for a failing test to print."""
        parts = []
        for path in sorted((self.state_dir / "logs").glob("*.log")):
            data = path.read_bytes()[-tail_bytes:]
            parts.append(f"----- {path.name} -----\n{data.decode(errors='replace')}")
        if self.errors:
            parts.append("----- harness errors -----\n" + "\n".join(self.errors))
        return "\n".join(parts)
