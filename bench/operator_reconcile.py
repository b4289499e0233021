"""Operator reconcile latency: PulsarCluster created -> all its children exist.

The real operator process runs against kmock's Kubernetes emulator (the same
harness as the e2e tests). Clusters are created one at a time through the API;
the clock stops when every child (StatefulSets, Services, ConfigMaps, the
bookie PodDisruptionBudget) of that cluster is stored. Reports p50/p99 over N
clusters (target: p99 < 1 s).

    python -m bench operator_reconcile [--clusters 50]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import pathlib
import statistics
import tempfile
import time
from typing import Any

import aiohttp
import yaml
from pulsar_common.testing import free_port
from pulsar_operator import cluster_reconcile, emulation, kube

SAMPLE = emulation.REPO / "examples" / "pulsar-cluster.yaml"
CLUSTERS_PATH = "/apis/pulsar.pulsar-py.dev/v1alpha1/namespaces/default/pulsarclusters"
POLL_S = 0.002


def expected_children(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """(plural, name) of every child the reconciler plans for this cluster."""
    plan = cluster_reconcile.reconcile(doc, {}, "2026-01-01T00:00:00Z")
    plurals = {kind: plural for (_, kind), plural in kube.PLURALS.items()}
    return {(plurals[o["kind"]], o["metadata"]["name"]) for o in plan.objects}


def stored(emulator: emulation.RealisticEmulator) -> set[tuple[str, str]]:
    return {(resource.plural, name) for (resource, _, name), obj in list(emulator.objects.items())
            if not obj.deleted}


async def measure(clusters: int, workdir: pathlib.Path) -> list[float]:
    template = yaml.safe_load(SAMPLE.read_text())
    latencies = []
    async with emulation.running_emulator() as (emulator, url):
        kubeconfig = emulation.write_kubeconfig(workdir / "kubeconfig", url)
        await emulation.kubectl(kubeconfig, "apply", "--validate=false", "-f", str(emulation.CRD_DIR))
        operator = emulation.OperatorProcess(kubeconfig, free_port(), "--no-leader-election", "--all-namespaces",
                                             "--resync-interval", "600", log=workdir / "operator.log")
        await operator.start()
        try:
            await emulation.wait_for(operator.healthy, 60, "operator /healthz")
            async with aiohttp.ClientSession() as session:
                for i in range(clusters):
                    doc = copy.deepcopy(template)
                    doc["metadata"] = {"name": f"bench-{i}", "namespace": "default"}
                    wanted = expected_children(doc)
                    started = time.perf_counter()
                    async with session.post(url + CLUSTERS_PATH, json=doc) as resp:
                        resp.raise_for_status()
                    while not wanted <= stored(emulator):
                        await asyncio.sleep(POLL_S)
                        if time.perf_counter() - started > 60:
                            raise TimeoutError(f"bench-{i}: children missing: {sorted(wanted - stored(emulator))}")
                    latencies.append(time.perf_counter() - started)
        finally:
            await operator.stop()
    return latencies


def report(latencies: list[float]) -> None:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    print(f"operator reconcile: {len(ordered)} clusters, PulsarCluster created -> all children present")
    print(f"  p50 {statistics.median(ordered) * 1000:.0f} ms   p99 {p99 * 1000:.0f} ms   "
          f"max {ordered[-1] * 1000:.0f} ms   (target p99 < 1000 ms)")


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench operator_reconcile")
    parser.add_argument("--clusters", type=int, default=50)
    args, _ = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-operator-") as workdir:
        report(asyncio.run(measure(args.clusters, pathlib.Path(workdir))))


def main() -> None:
    run([])


if __name__ == "__main__":
    main()
