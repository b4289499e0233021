"""A broker on a local 3-bookie cluster next to `pulsar standalone`, and a writer's resume
time after a bookie SIGKILL.

Part 1, throughput and latency: one broker on `pulsar local-cluster` with 3 bookies
(E=3, WQ=2, AQ=2: every entry on two bookies) and `pulsar standalone` (one in-process
bookie, E=WQ=AQ=1) run side by side with the same journal sync setting; the workloads
of bench.broker_workloads run against each in fresh client processes, rounds alternating
between the two, best round shown (the machine is shared: noise only makes things worse):

- batched produce msg/s and MB/s: 100 B messages, batches of up to 1000, 1 ms delay
- unbatched synchronous publish p50 / p99 ms: one send at a time

Part 2, resume after a bookie SIGKILL: the official client publishes continuously
(unbatched, asynchronously, a bounded number in flight) through the broker of a cluster
of 4 bookies with E=3, WQ=2, AQ=2; a bookie of the current ledger's ensemble (read from
the ledger metadata in etcd) is SIGKILLed, and the longest gap between consecutive
acknowledgements around the kill is the time the writer took to resume. The fourth
bookie is the spare the ensemble change needs: with exactly 3 bookies and E=3 a dead
bookie has no replacement and the writes whose write set includes it stall until it
returns (as in BookKeeper). Between trials the killed bookie is started again, so each
trial kills a bookie of a fresh ensemble with a spare available.

    python -m bench.cluster [--seconds S] [--rounds N] [--trials N] [--no-fsync]
    python -m bench cluster

Targets recorded in issue 4: cluster batched produce >= 0.5x standalone; resume < 2 s.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pulsar

from bench import broker_servers, broker_vs_lite, broker_workloads

if TYPE_CHECKING:
    from pulsar_broker.local_cluster import LocalCluster as Cluster

Log = Callable[[str], None]

BATCHED_MAX_MESSAGES = 400_000
LATENCY_MAX_SENDS = 3000
CLUSTER_START_ATTEMPTS = 2
#: Resume trial: acknowledgements before the kill, and after it (or the wait's bound).
RESUME_ACKS_BEFORE = 500
RESUME_ACKS_AFTER = 1000
RESUME_WAIT_S = 30.0
#: Unbatched sends in flight in the resume trial (the client blocks beyond it).
RESUME_PENDING_MAX = 200
RESUME_TARGET_S = 2.0
PRODUCE_RATIO_TARGET = 0.5


Figure = broker_vs_lite.Figure

FIGURES = (
    Figure("batched produce msg/s", "produce_msg_per_s", True),
    Figure("batched produce MB/s", "produce_mb_per_s", True),
    Figure("unbatched sync publish p50 ms", "sync_p50_ms", False),
    Figure("unbatched sync publish p99 ms", "sync_p99_ms", False),
)


# Part 1: throughput and latency, cluster next to standalone


def start_standalone(directory: pathlib.Path, journal_sync: bool) -> Target:
    broker = broker_servers.start_ours(directory, journal_sync)
    return Target("standalone", broker.service_url, broker.stop)


def start_cluster(directory: pathlib.Path, bookies: int, journal_sync: bool, log: Log) -> Cluster:
    """A started local cluster; tried again on fresh ports if a process fails to start (free
    ports are picked before they are bound, so on a shared machine they can be taken)."""
    from pulsar_broker import local_cluster

    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    for attempt in range(1, CLUSTER_START_ATTEMPTS + 1):
        cluster = local_cluster.LocalCluster(
            directory / f"attempt-{attempt}",
            bookies=bookies,
            brokers=1,
            ensemble=3,
            write_quorum=2,
            ack_quorum=2,
            journal_sync=journal_sync,
        )
        try:
            return cluster.start()
        except (RuntimeError, TimeoutError, subprocess.CalledProcessError) as exc:
            cluster.stop()
            if attempt == CLUSTER_START_ATTEMPTS:
                raise
            log(f"  cluster did not start ({str(exc).splitlines()[0]}); trying again")
        except BaseException:
            cluster.stop()
            raise
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Target:
    """A running broker under test: its name, service URL and how to stop it."""

    name: str
    service_url: str
    stop: Callable[[], None]


def measure_round(url: str, seconds: float, log: Log) -> dict[str, float]:
    topic = f"persistent://public/default/bench-cluster-{int(time.time() * 1000)}"
    produced = broker_vs_lite.run_workload(
        url, "batched_produce", topic, seconds, BATCHED_MAX_MESSAGES
    )
    mb_per_s = produced["msg_per_s"] * broker_workloads.SMALL_PAYLOAD_BYTES / 1e6
    log(
        f"    batched produce: {produced['messages']:.0f} msgs, "
        f"{produced['msg_per_s']:,.0f} msg/s, {mb_per_s:.2f} MB/s"
    )
    latency = broker_vs_lite.run_workload(
        url, "sync_latency", topic + "-sync", seconds, LATENCY_MAX_SENDS
    )
    log(
        f"    sync publish: {latency['messages']:.0f} sends, p50 {latency['p50_ms']:.3f} ms, "
        f"p99 {latency['p99_ms']:.3f} ms"
    )
    return {
        "produce_msg_per_s": produced["msg_per_s"],
        "produce_mb_per_s": mb_per_s,
        "sync_p50_ms": latency["p50_ms"],
        "sync_p99_ms": latency["p99_ms"],
    }


def measure_targets(
    targets: list[Target], seconds: float, rounds: int, log: Log
) -> dict[str, list[dict[str, float]]]:
    """Rounds interleaved over the targets in alternating order, so load changes hit both."""
    measured: dict[str, list[dict[str, float]]] = {t.name: [] for t in targets}
    failed: set[str] = set()
    for index in range(rounds):
        order = targets if index % 2 == 0 else list(reversed(targets))
        for target in order:
            if target.name in failed:
                continue
            log(f"  round {index + 1}/{rounds}: {target.name}")
            try:
                measured[target.name].append(measure_round(target.service_url, seconds, log))
            except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
                log(f"  {target.name}: workload failed: {exc}")
                failed.add(target.name)
    return measured


def throughput_part(base: pathlib.Path, args: argparse.Namespace, log: Log) -> list[str]:
    targets: list[Target] = []
    try:
        cluster = start_cluster(base / "cluster-3", 3, args.journal_sync, log)
        targets.append(Target("cluster", cluster.service_url, cluster.stop))
        log(f"  cluster (3 bookies, E=3 WQ=2 AQ=2): broker at {cluster.service_url}")
        targets.append(start_standalone(base / "standalone", args.journal_sync))
        log(f"  standalone (E=WQ=AQ=1): at {targets[-1].service_url}")
        measured = measure_targets(targets, args.seconds, args.rounds, log)
    finally:
        for target in targets:
            target.stop()
    results = {
        name: broker_vs_lite.best_of(rounds, FIGURES) for name, rounds in measured.items() if rounds
    }
    return throughput_table(results)


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3f}"


def throughput_table(results: dict[str, dict[str, float]]) -> list[str]:
    cluster, standalone = results.get("cluster", {}), results.get("standalone", {})
    header = f"{'figure':<32}{'cluster':>12}{'standalone':>12}{'cluster/standalone':>20}"
    lines = [header, "-" * len(header)]
    for figure in FIGURES:
        ours, base = cluster.get(figure.key), standalone.get(figure.key)
        ratio = f"{ours / base:.2f}x" if ours is not None and base else "-"
        lines.append(f"{figure.label:<32}{_cell(ours):>12}{_cell(base):>12}{ratio:>20}")
    ours, base = cluster.get("produce_msg_per_s"), standalone.get("produce_msg_per_s")
    if ours is None or not base:
        lines.append(f"target cluster produce >= {PRODUCE_RATIO_TARGET}x standalone: not measured")
    else:
        met = "met" if ours / base >= PRODUCE_RATIO_TARGET else "NOT met"
        lines.append(
            f"target cluster produce >= {PRODUCE_RATIO_TARGET}x standalone: "
            f"{ours / base:.2f}x {met}"
        )
    return lines


# Part 2: resume after a bookie SIGKILL


@dataclass
class AckStream:
    """Publishes continuously from a thread; records the time of every acknowledgement.

    The official client completes a producer's sends in order, so consecutive
    acknowledgement times show every pause of the writer.
    """

    producer: pulsar.Producer
    acked_at: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> AckStream:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        payload = os.urandom(broker_workloads.SMALL_PAYLOAD_BYTES)
        while not self._stop.is_set():
            self.producer.send_async(payload, self._done)

    def _done(self, result: object, _message_id: object) -> None:
        if result == pulsar.Result.Ok:
            self.acked_at.append(time.monotonic())
        else:
            self.errors.append(str(result))

    def wait_for_acks(self, count: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while len(self.acked_at) < count:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def finish(self) -> None:
        """Stop sending and wait for the receipts of what is in flight."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(RESUME_WAIT_S)
        self.producer.flush()


async def _current_ensemble(metadata_url: str) -> list[str]:
    """The bookies of the last fragment of the newest open ledger."""
    from pulsar_common.metadata import factory

    store = await factory.create_store(metadata_url)
    try:
        records = []
        for name in await store.get_children("/ledgers"):
            if name.isdigit():
                found = await store.get(f"/ledgers/{name}")
                if found is not None:
                    records.append(json.loads(found.value))
    finally:
        await store.close()
    open_ledgers = [r for r in records if r.get("state") == "OPEN"]
    if not open_ledgers:
        raise RuntimeError("no open ledger in the metadata store")
    newest = max(open_ledgers, key=lambda r: r["ledgerId"])
    bookies: list[str] = newest["ensembles"][-1]["bookies"]
    return bookies


@dataclass(frozen=True)
class ResumeTrial:
    killed: str
    longest_gap_s: float
    kill_to_first_ack_s: float
    typical_gap_ms: float
    acks_after: int
    errors: int


def longest_gap_around(acked_at: list[float], killed_at: float) -> tuple[float, float, float]:
    """(longest gap between consecutive acks from just before the kill on, time from the
    kill to the first ack after it, median gap before the kill in ms)."""
    before = [t for t in acked_at if t <= killed_at]
    after = [t for t in acked_at if t > killed_at]
    if not before or not after:
        return float("inf"), float("inf"), float("nan")
    window = [before[-1], *after]
    longest = max(b - a for a, b in itertools.pairwise(window))
    steady = sorted(b - a for a, b in itertools.pairwise(before))
    typical_ms = steady[len(steady) // 2] * 1000 if steady else float("nan")
    return longest, after[0] - killed_at, typical_ms


def resume_trial(cluster: Cluster, index: int, log: Log) -> ResumeTrial:
    """Kill the index-th (cyclically) bookie of the current ensemble while publishing."""
    client = pulsar.Client(
        cluster.service_url,
        operation_timeout_seconds=60,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Error, "/dev/stderr"),
    )
    try:
        producer = client.create_producer(
            f"persistent://public/default/bench-resume-{int(time.time() * 1000)}",
            batching_enabled=False,
            send_timeout_millis=60_000,
            max_pending_messages=RESUME_PENDING_MAX,
            block_if_queue_full=True,
        )
        stream = AckStream(producer).start()
        try:
            if not stream.wait_for_acks(RESUME_ACKS_BEFORE, RESUME_WAIT_S):
                raise RuntimeError(f"only {len(stream.acked_at)} acks before the kill")
            ensemble = asyncio.run(_current_ensemble(cluster.metadata_url))
            chosen = ensemble[index % len(ensemble)]
            victim = next(b for b in cluster.bookies if b.bookie_id == chosen)
            count_at_kill = len(stream.acked_at)
            killed_at = time.monotonic()
            victim.kill()
            stream.wait_for_acks(count_at_kill + RESUME_ACKS_AFTER, RESUME_WAIT_S)
        finally:
            stream.finish()
        after = asyncio.run(_current_ensemble(cluster.metadata_url))
        if victim.bookie_id in after:
            raise RuntimeError(f"{victim.bookie_id} is still in the ensemble {after}")
        acked_at = list(stream.acked_at)
        longest, first, typical_ms = longest_gap_around(acked_at, killed_at)
        trial = ResumeTrial(
            victim.bookie_id,
            longest,
            first,
            typical_ms,
            len(acked_at) - count_at_kill,
            len(stream.errors),
        )
        log(
            f"    killed {trial.killed} of {', '.join(ensemble)} (now {', '.join(after)}): "
            "longest ack gap "
            f"{trial.longest_gap_s:.3f} s, first ack {trial.kill_to_first_ack_s * 1000:.0f} ms "
            f"after the kill, typical gap {trial.typical_gap_ms:.2f} ms, "
            f"{trial.acks_after} acks after, {trial.errors} send errors"
        )
        victim.start()  # back as a spare for the next trial
        return trial
    finally:
        client.close()


def resume_part(base: pathlib.Path, args: argparse.Namespace, log: Log) -> list[str]:
    log(
        "  resume after a bookie SIGKILL: 4 bookies (3 in the ensemble + 1 spare, which the "
        "ensemble change needs), E=3 WQ=2 AQ=2"
    )
    cluster = start_cluster(base / "cluster-4", 4, args.journal_sync, log)
    trials: list[ResumeTrial] = []
    try:
        for index in range(args.trials):
            log(f"  trial {index + 1}/{args.trials}")
            try:
                trials.append(resume_trial(cluster, index, log))
            except (RuntimeError, StopIteration, OSError) as exc:
                log(f"  trial failed: {exc!r}")
                break
    finally:
        cluster.stop()
    return resume_lines(trials)


def resume_lines(trials: list[ResumeTrial]) -> list[str]:
    if not trials:
        return [f"target resume after bookie SIGKILL < {RESUME_TARGET_S:g} s: not measured"]
    gaps = [t.longest_gap_s for t in trials]
    worst = max(gaps)
    met = "met" if worst < RESUME_TARGET_S else "NOT met"
    return [
        "resume after bookie SIGKILL (4 bookies, E=3 WQ=2 AQ=2), longest ack gap per trial: "
        + ", ".join(f"{g:.3f} s" for g in gaps),
        f"target resume after bookie SIGKILL < {RESUME_TARGET_S:g} s: worst {worst:.3f} s {met}",
    ]


Part = Callable[[pathlib.Path, argparse.Namespace, Log], list[str]]


def run_part(
    name: str, part: Part, base: pathlib.Path, args: argparse.Namespace, log: Log
) -> list[str]:
    """One part's result lines; a cluster or broker that cannot start ends only that part."""
    try:
        return part(base, args, log)
    except (RuntimeError, TimeoutError, OSError, subprocess.CalledProcessError) as exc:
        log(f"  {name}: could not run: {exc}")
        return [f"{name}: not measured ({str(exc).splitlines()[0]})"]


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster")
    parser.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="seconds per throughput or latency workload (default 3)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds per target; the best is shown (default 3)"
    )
    parser.add_argument(
        "--trials", type=int, default=3, help="bookie kills in the resume measurement (default 3)"
    )
    parser.add_argument(
        "--no-fsync",
        dest="journal_sync",
        action="store_false",
        help="journalSyncData=false on every bookie (default: fsync on)",
    )
    parser.add_argument(
        "--parts", default="throughput,resume", help="comma separated subset of throughput,resume"
    )
    parser.add_argument("--dir", default=None, help="where the temp data dirs go")
    parser.add_argument("--keep", action="store_true", help="keep data dirs and logs")
    args, _ = parser.parse_known_args(argv)

    def log(line: str) -> None:
        print(line, flush=True)

    base = pathlib.Path(tempfile.mkdtemp(prefix="bench-cluster-", dir=args.dir))
    log(
        f"cluster vs standalone ({base}); journalSyncData={str(args.journal_sync).lower()}, "
        f"{args.seconds:g} s per workload, best of {args.rounds} rounds; "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    started = time.monotonic()
    parts = args.parts.split(",")
    lines: list[str] = []
    try:
        for name, part in (("throughput", throughput_part), ("resume", resume_part)):
            if name in parts:
                lines += run_part(name, part, base, args, log)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    for line in lines:
        log(line)
    log(f"took {time.monotonic() - started:.0f} s")


def main() -> None:
    run(sys.argv[1:])


if __name__ == "__main__":
    main()
