"""Cluster networking on one host: addresses, Service endpoints and the cluster's name table.

Every pod gets its own loopback address (from 127.77.0.0/16 by default) and
every ClusterIP Service another (127.78.0.0/16); Linux routes all of 127/8
to the loopback device, so a server can bind any of them. Each harness takes
a block of 1024 of each (`AddressBlock`), so harnesses running side by side
never share one. Names resolve
through one hosts file, owned by the harness and bind-mounted over /etc/hosts
in each pod's private mount namespace: Services (`<svc>.<ns>.svc[.cluster.local]`),
headless Services (one line per endpoint), pods behind their StatefulSet's
headless Service (`<pod>.<svc>.<ns>.svc[.cluster.local]`) and each pod's own
hostname. The file is rewritten in place (same inode), so a bind mount sees
every change; glibc reads it on each lookup. Deviation: every pod sees every
other pod's short hostname (a kubelet writes only the pod's own).
"""

from __future__ import annotations

import dataclasses
import fcntl
import ipaddress
import os
import pathlib
import random
import tempfile
from collections.abc import Iterable
from typing import Any

from pulsar_operator.kubelet_emulation import podspec

POD_CIDR = "127.77.0.0/16"
SERVICE_CIDR = "127.78.0.0/16"
CLUSTER_DOMAIN = "cluster.local"
#: Addresses per harness: pods and Services each get this many from their range.
BLOCK_SIZE = 1024
LOCK_DIR = pathlib.Path(tempfile.gettempdir()) / "kubelet-harness-address-blocks"
LOCALHOST_LINES = ("127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback")


class AddressPool:
    """Hands out `count` addresses of a CIDR from `start` on, in order, never one twice in a run."""

    def __init__(self, cidr: str, start: int = 0, count: int | None = None) -> None:
        network = ipaddress.ip_network(cidr)
        first = int(network.network_address) + start
        last = first + (count if count is not None else network.num_addresses) - 1
        # The block's first and last addresses are skipped: they are the network's own
        # address and its broadcast address at the ends of the CIDR.
        self._addresses = (str(ipaddress.ip_address(a)) for a in range(first + 1, last))

    def allocate(self) -> str:
        try:
            return next(self._addresses)
        except StopIteration:
            raise RuntimeError("address pool exhausted") from None


class AddressBlock:
    """A slice of the pod and Service ranges that only this harness uses while it runs.

    Two harnesses at once on one machine (test runs side by side) would otherwise hand
    out the same addresses, and their pods would fail to bind. Each claims a block by
    holding an flock on a file named after it; the lock goes with the process.
    """

    def __init__(self, pod_cidr: str, service_cidr: str, block_size: int = BLOCK_SIZE,
                 rng: random.Random | None = None) -> None:
        blocks = min(ipaddress.ip_network(c).num_addresses for c in (pod_cidr, service_cidr)) // block_size
        LOCK_DIR.mkdir(parents=True, exist_ok=True)
        for index in (rng or random.Random()).sample(range(blocks), blocks):
            fd = os.open(LOCK_DIR / f"block-{index}.lock", os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._fd: int | None = fd
            self.pods = AddressPool(pod_cidr, index * block_size, block_size)
            self.services = AddressPool(service_cidr, index * block_size, block_size)
            return
        raise RuntimeError(f"all {blocks} address blocks are taken by other harnesses")

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclasses.dataclass(frozen=True)
class Endpoint:
    pod: str
    ip: str
    ready: bool


def is_headless(service: dict[str, Any]) -> bool:
    return (service.get("spec") or {}).get("clusterIP") == "None"


def selects(service: dict[str, Any], pod: dict[str, Any]) -> bool:
    selector = (service.get("spec") or {}).get("selector") or {}
    labels = (pod.get("metadata") or {}).get("labels") or {}
    same_namespace = (service.get("metadata") or {}).get("namespace") == (pod.get("metadata") or {}).get("namespace")
    return bool(selector) and same_namespace and all(labels.get(k) == v for k, v in selector.items())


def pod_ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or [])
    return status.get("phase") == "Running" and ready


def endpoints(service: dict[str, Any], pods: Iterable[dict[str, Any]]) -> list[Endpoint]:
    """The pods a Service sends to: selected, with an address, not terminating; ready unless
    the Service publishes not-ready addresses."""
    publish_all = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    result = []
    for pod in pods:
        ip = (pod.get("status") or {}).get("podIP")
        if not ip or (pod.get("metadata") or {}).get("deletionTimestamp") or not selects(service, pod):
            continue
        ready = pod_ready(pod)
        if ready or publish_all:
            result.append(Endpoint(str(pod["metadata"]["name"]), str(ip), ready))
    return sorted(result, key=lambda e: e.pod)


def target_port(service_port: dict[str, Any], pod: dict[str, Any]) -> int:
    return podspec.port_number(pod, service_port.get("targetPort", service_port.get("port")))


def _service_names(namespace: str, name: str) -> list[str]:
    return [f"{name}.{namespace}.svc.{CLUSTER_DOMAIN}", f"{name}.{namespace}.svc", f"{name}.{namespace}"]


def name_table(services: Iterable[dict[str, Any]], pods: list[dict[str, Any]],
               cluster_ips: dict[tuple[str, str], str]) -> list[tuple[str, str]]:
    """(address, name) pairs of the cluster DNS, as the hosts file carries them."""
    entries: list[tuple[str, str]] = []
    for service in services:
        meta = service.get("metadata") or {}
        namespace, name = str(meta.get("namespace")), str(meta.get("name"))
        if not is_headless(service):
            ip = cluster_ips.get((namespace, name))
            entries += [(ip, n) for n in _service_names(namespace, name)] if ip else []
            continue
        members = endpoints(service, pods)
        entries += [(e.ip, n) for e in members for n in _service_names(namespace, name)]
        by_name = {str(p["metadata"]["name"]): p for p in pods}
        for member in members:
            pod_spec = by_name[member.pod].get("spec") or {}
            if pod_spec.get("subdomain") == name:
                host = pod_spec.get("hostname") or member.pod
                entries += [(member.ip, f"{host}.{name}.{namespace}.svc.{CLUSTER_DOMAIN}"),
                            (member.ip, f"{host}.{name}.{namespace}.svc")]
    for pod in pods:
        ip = (pod.get("status") or {}).get("podIP")
        if ip:
            entries.append((str(ip), str((pod.get("spec") or {}).get("hostname") or pod["metadata"]["name"])))
    return entries


def render_hosts(entries: list[tuple[str, str]]) -> str:
    """One line per name, its addresses in a stable order (glibc returns them all)."""
    lines = list(LOCALHOST_LINES)
    lines += [f"{ip}\t{name}" for name, ip in sorted({(name, ip) for ip, name in entries})]
    return "\n".join(lines) + "\n"


class HostsFile:
    """The harness's hosts file, rewritten in place so bind mounts of it see the change."""

    def __init__(self, path: pathlib.Path) -> None:
        self.path = path
        self.text = ""
        self.write(render_hosts([]))

    def write(self, text: str) -> bool:
        if text == self.text:
            return False
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            data = text.encode()
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
        self.text = text
        return True
