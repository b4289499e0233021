"""The cluster a chaos run attacks: 3 etcd members, 4 bookies behind fault-injecting relays,
2 brokers and a proxy, all real `pulsar` / `etcd` processes on loopback.

Built from the same launchers as `pulsar local-cluster` (pulsar_broker.testing,
pulsar_bookie.service.testing), with what a chaos run needs on top: a three-member
etcd (so that losing its leader is survivable), a relay in front of each bookie (the
bookie registers the relay's port as its id), a small tmpfs per bookie when running
as root (so that a disk can be filled), and short metadata session timeouts (so that a
pause longer than the session costs seconds, not minutes).
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import urllib.request
from collections.abc import Iterator
from typing import Any

from pulsar_bookie.service import testing as bookie_testing
from pulsar_broker import local_cluster
from pulsar_broker import testing as broker_testing
from pulsar_common import etcd_server, testing

from tools.chaos import relay

#: The brokers' and proxy's metadataStoreSessionTimeoutMillis (Apache's default is 30 s).
SESSION_TIMEOUT_MS = 6000
#: The bookies' zkTimeout (their registration's session).
BOOKIE_SESSION_TIMEOUT_MS = 6000
#: Size of each bookie's tmpfs (journal and ledgers), when one can be mounted.
BOOKIE_DISK_MB = 96


class EtcdMember(etcd_server.EtcdServer):
    """One member of a three-member etcd cluster (ports fixed at creation, kept on restart)."""

    def __init__(self, data_dir: pathlib.Path, name: str) -> None:
        super().__init__(data_dir, testing.free_port(), testing.free_port())
        self.name = name
        self.initial_cluster = ""

    @property
    def peer_url(self) -> str:
        return f"http://{self.host}:{self.peer_port}"

    def _arguments(self) -> list[str]:
        arguments = super()._arguments()
        arguments[arguments.index("--name") + 1] = self.name
        arguments[arguments.index("--initial-cluster") + 1] = self.initial_cluster
        return arguments + ["--heartbeat-interval", "100", "--election-timeout", "1000"]

    def launch(self) -> None:
        """Start the process without waiting: a member is healthy only once a quorum is."""
        binary = shutil.which("etcd")
        assert binary is not None, "etcd is not installed"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 (kept open while etcd runs)
        self._process = subprocess.Popen(
            testing.dying_with_parent([binary, *self._arguments()]),
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)

    def wait_healthy(self, timeout_s: float = 60.0) -> None:
        testing.wait_until(self._healthy, timeout_s, f"etcd member {self.name}", self._process)

    def status(self) -> dict[str, Any]:
        """The member's maintenance status (member id, leader id), over the JSON gateway."""
        request = urllib.request.Request(f"{self.endpoint}/v3/maintenance/status", data=b"{}",
                                         method="POST")
        with urllib.request.urlopen(request, timeout=2) as reply:
            result: dict[str, Any] = json.loads(reply.read())
            return result


class ChaosCluster:
    """Every process of the run, reachable by role and index; started and stopped by pid."""

    def __init__(self, data_dir: pathlib.Path, bookies: int = 4, brokers: int = 2) -> None:
        self.data_dir = data_dir
        self.etcd = [EtcdMember(data_dir / f"etcd-{i}", f"etcd-{i}") for i in range(3)]
        initial = ",".join(f"{m.name}={m.peer_url}" for m in self.etcd)
        for member in self.etcd:
            member.initial_cluster = initial
        self.metadata_url = "etcd:" + ",".join(m.endpoint for m in self.etcd)
        self.mounts: list[pathlib.Path] = []
        self.relays: list[relay.Relay] = []
        self.bookies: list[bookie_testing.BookieProcess] = []
        for i in range(bookies):
            bookie_dir = data_dir / f"bookie-{i}"
            port, relay_port = testing.free_port(), testing.free_port()
            self.relays.append(relay.Relay(relay_port, port))
            self.bookies.append(bookie_testing.BookieProcess(
                bookie_dir, metadata_url=self.metadata_url, port=port, sync=False,
                overrides={"bookieId": f"127.0.0.1:{relay_port}",
                           "journalDirectories": str(bookie_dir / "disk" / "journal"),
                           "ledgerDirectories": str(bookie_dir / "disk" / "ledgers"),
                           "zkTimeout": str(BOOKIE_SESSION_TIMEOUT_MS),
                           "diskUsageThreshold": "0.90", "diskUsageWarnThreshold": "0.85",
                           "diskUsageLwmThreshold": "0.80"}))
        overrides = {
            "managedLedgerDefaultEnsembleSize": "3",
            "managedLedgerDefaultWriteQuorum": "2",
            "managedLedgerDefaultAckQuorum": "2",
            "metadataStoreSessionTimeoutMillis": str(SESSION_TIMEOUT_MS),
            "brokerDeduplicationEnabled": "false",
        }
        self.brokers = [
            broker_testing.BrokerProcess(data_dir / f"broker-{i}", self.metadata_url, overrides)
            for i in range(brokers)]
        self.proxy = broker_testing.ProxyProcess(data_dir / "proxy", {
            "metadataStoreUrl": self.metadata_url, "clusterName": local_cluster.CLUSTER_NAME,
            "metadataStoreSessionTimeoutMillis": str(SESSION_TIMEOUT_MS)})

    @property
    def service_url(self) -> str:
        return self.proxy.service_url

    @property
    def web_url(self) -> str:
        return self.brokers[0].web_url

    @property
    def can_fill_disks(self) -> bool:
        return bool(self.mounts)

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        for member in self.etcd:
            member.launch()
        for member in self.etcd:
            member.wait_healthy()
        self._mount_bookie_disks()
        for r in self.relays:
            r.start()
        for bookie in self.bookies:
            bookie.launch()
        for bookie in self.bookies:
            bookie.wait_ready()
        first = self.brokers[0]
        broker_testing.initialize_cluster_metadata(
            self.metadata_url, local_cluster.CLUSTER_NAME, first.web_url, first.service_url)
        for broker in self.brokers:
            broker.start()
        self.proxy.start()

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.proxy.stop()
        for broker in self.brokers:
            with contextlib.suppress(Exception):
                broker.stop()
        for bookie in self.bookies:
            with contextlib.suppress(Exception):
                bookie.stop(timeout_s=10)
        for r in self.relays:
            r.stop()
        for member in self.etcd:
            member.stop()
        for mount in self.mounts:
            subprocess.run(["umount", "-l", str(mount)], check=False, capture_output=True)

    def _mount_bookie_disks(self) -> None:
        """A tmpfs per bookie when this process may mount (root); else bookies use the disk
        and the disk-full fault is skipped."""
        if os.geteuid() != 0 or shutil.which("mount") is None:
            return
        for bookie in self.bookies:
            disk = self.disk_of(bookie)
            disk.mkdir(parents=True, exist_ok=True)
            done = subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={BOOKIE_DISK_MB}m", "tmpfs", str(disk)],
                check=False, capture_output=True)
            if done.returncode != 0:
                return
            self.mounts.append(disk)

    @staticmethod
    def disk_of(bookie: bookie_testing.BookieProcess) -> pathlib.Path:
        """The directory (a tmpfs when mounted) holding a bookie's journal and ledgers."""
        return bookie.data_dir / "disk"

    def processes(self) -> Iterator[tuple[str, int | None]]:
        """(role name, pid) of every process, for memory sampling."""
        for i, member in enumerate(self.etcd):
            yield f"etcd-{i}", member.pid
        for i, bookie in enumerate(self.bookies):
            yield f"bookie-{i}", bookie.pid
        for i, broker in enumerate(self.brokers):
            yield f"broker-{i}", broker.process.pid if broker.process else None
        yield "proxy", self.proxy.process.pid if self.proxy.process else None

    def etcd_leader(self) -> int | None:
        """Index of the etcd member that leads, None when no member answers."""
        for member in self.etcd:
            if not member.is_running():
                continue
            try:
                status = member.status()
            except OSError:
                continue
            leader = int(status.get("leader", 0))
            for i, candidate in enumerate(self.etcd):
                if not candidate.is_running():
                    continue
                try:
                    if int(candidate.status()["header"]["member_id"]) == leader:
                        return i
                except OSError:
                    continue
        return None
