"""`pulsar local-cluster`: etcd, N bookies, M brokers and P proxies as child processes on loopback.

For trying a real cluster on one machine, and for the end-to-end tests (which
use the LocalCluster class directly): every process has its own free ports and
data directory, is found by pid, and is stopped (or SIGKILLed) individually.
With several brokers, each namespace bundle is served by one of them (see
pulsar_broker.namespace); clients may start their lookups at any broker. With
proxies, the proxies' URLs are the cluster's service URLs: clients reach every
broker through them, as they would from outside a Kubernetes cluster.
"""

from __future__ import annotations

import argparse
import pathlib
import signal
import threading
from collections.abc import Callable
from typing import Any

from pulsar_bookie.service import testing as bookie_testing
from pulsar_common import errors, etcd_server, testing

from pulsar_broker import testing as broker_testing

CLUSTER_NAME = "local"


class LocalCluster:
    def __init__(self, data_dir: pathlib.Path, *, bookies: int = 3, brokers: int = 1,
                 ensemble: int = 3, write_quorum: int = 2, ack_quorum: int = 2,
                 broker_overrides: dict[str, str] | None = None,
                 journal_sync: bool = True, proxies: int = 0) -> None:
        if not 1 <= ack_quorum <= write_quorum <= ensemble <= bookies:
            raise errors.ConfigError("need 1 <= ack quorum <= write quorum <= ensemble <= bookies")
        if brokers < 0 or proxies < 0:
            raise errors.ConfigError("the numbers of brokers and proxies cannot be negative")
        self.data_dir = data_dir
        self.etcd = etcd_server.EtcdServer(data_dir / "etcd", testing.free_port(),
                                           testing.free_port())
        self.bookies = [
            bookie_testing.BookieProcess(data_dir / f"bookie-{i}", metadata_url=self.metadata_url,
                                         sync=journal_sync)
            for i in range(bookies)
        ]
        self._broker_count = brokers
        self._broker_overrides = {
            "managedLedgerDefaultEnsembleSize": str(ensemble),
            "managedLedgerDefaultWriteQuorum": str(write_quorum),
            "managedLedgerDefaultAckQuorum": str(ack_quorum),
            **(broker_overrides or {}),
        }
        self.brokers: list[broker_testing.BrokerProcess] = []
        self.proxies = [
            broker_testing.ProxyProcess(data_dir / f"proxy-{i}", {
                "metadataStoreUrl": self.metadata_url, "clusterName": CLUSTER_NAME})
            for i in range(proxies)
        ]

    @property
    def metadata_url(self) -> str:
        return self.etcd.url

    @property
    def service_url(self) -> str:
        """Every proxy, or without proxies every broker, as the client's multi-host service
        URL: lookups go to whichever answers, so the cluster stays reachable while one is
        down."""
        front = self.proxies or self.brokers
        hosts = ",".join(p.service_url.removeprefix("pulsar://") for p in front)
        return f"pulsar://{hosts}"

    @property
    def broker_service_url(self) -> str:
        """Every broker, bypassing the proxies."""
        hosts = ",".join(b.service_url.removeprefix("pulsar://") for b in self.brokers)
        return f"pulsar://{hosts}"

    @property
    def web_url(self) -> str:
        return (self.proxies or self.brokers)[0].web_url

    def start(self) -> LocalCluster:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.etcd.start()
        for bookie in self.bookies:
            bookie.launch()
        for bookie in self.bookies:
            bookie.wait_ready()
        self.brokers = [
            broker_testing.BrokerProcess(self.data_dir / f"broker-{i}", self.metadata_url,
                                         self._broker_overrides)
            for i in range(self._broker_count)
        ]
        if self.brokers:
            first = self.brokers[0]
            broker_testing.initialize_cluster_metadata(
                self.metadata_url, CLUSTER_NAME, first.web_url, first.service_url)
        for broker in self.brokers:
            broker.start()
        for proxy in self.proxies:
            proxy.start()
        return self

    def stop(self) -> None:
        for proxy in self.proxies:
            proxy.stop()
        for broker in self.brokers:
            broker.stop()
        for bookie in self.bookies:
            bookie.stop()
        self.etcd.stop()

    def describe(self) -> str:
        lines = [f"etcd     {self.etcd.url}  pid {self.etcd.pid}"]
        lines += [f"bookie   {b.bookie_id}  http {b.http_url}  pid {b.pid}" for b in self.bookies]
        lines += [f"broker   {b.service_url}  {b.web_url}  pid {b.pid}" for b in self.brokers]
        lines += [f"proxy    {p.service_url}  {p.web_url}  pid {p.pid}" for p in self.proxies]
        return "\n".join(lines)


def add_arguments(parser: argparse.ArgumentParser) -> Callable[[Any], int]:
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--bookies", type=int, default=3)
    parser.add_argument("--brokers", type=int, default=1)
    parser.add_argument("--ensemble", type=int, default=3)
    parser.add_argument("--write-quorum", type=int, default=2)
    parser.add_argument("--ack-quorum", type=int, default=2)
    parser.add_argument("--proxies", type=int, default=1,
                        help="proxies in front of the brokers; their URLs are the service URLs")

    def run(args: Any) -> int:
        cluster = LocalCluster(pathlib.Path(args.data_dir).resolve(), bookies=args.bookies,
                               brokers=args.brokers, ensemble=args.ensemble,
                               write_quorum=args.write_quorum, ack_quorum=args.ack_quorum,
                               proxies=args.proxies)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            cluster.start()
            print(cluster.describe(), flush=True)
            print(f"\nservice URL {cluster.service_url}, web URL {cluster.web_url}; "
                  "Ctrl-C stops everything", flush=True)
            stop.wait()
        except KeyboardInterrupt:
            pass
        finally:
            cluster.stop()
        return 0

    return run
