"""Issue 16's cores question: can `pulsar standalone` use more than one core?

Our standalone (journalSyncData on, its defaults otherwise) in two modes: the
bookie in the broker's process (the default) and `standaloneBookieProcess=true`
(the bookie as a child process reached over loopback, as a cluster broker
reaches its bookies). Each mode runs pinned with `taskset` to one core (CPU 0)
and to two (CPUs 0,1); the child inherits the pinning. Every configuration is a
fresh standalone; rounds alternate over the configurations, best round kept.
The client processes are not pinned (on a 2-core machine they share the cores).

Workloads (bench.broker_workloads, each in a fresh client process, new topics):
batched produce msg/s (100 B, batches of up to 1000, 1 ms delay, subscription
made first), consume of that just-written backlog msg/s, the same batched
produce from PARALLEL_CLIENTS client processes at once (one client alone is
the bound of the first), 64 KiB produce MB/s (256 in flight), creating 2,000
producers on new topics (64 in flight), unbatched synchronous publish p50 ms. During each throughput workload, the CPU of the
standalone and of its bookie child as % of one core, in total and per thread
(from /proc/<pid>/task/*/stat), and how busy the whole machine was over the
step (/proc/stat; clients' start-up included), all as % of one core.

    python -m bench cores [--seconds 3] [--rounds 2] [--cpus 0 --cpus 0,1]
                          [--modes in-process,bookie-process]
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import os
import pathlib
import shutil
import tempfile
import time
from collections.abc import Callable

from bench import broker_servers, broker_vs_lite

BATCHED_MAX_MESSAGES = 1_500_000
LATENCY_MAX_SENDS = 3000
LARGE_MAX_MESSAGES = 5000
PRODUCERS_TO_CREATE = 2000
CREATE_TIMEOUT_S = 120.0
SUBSCRIPTION = "bench-cores"
MODES = {"in-process": {}, "bookie-process": {"standaloneBookieProcess": "true"}}
DEFAULT_CPUS = ("0", "0,1")
#: Threads shown per process and workload (the busiest).
TOP_THREADS = 4
#: Client processes of the parallel produce (one client alone bounds the batched produce).
PARALLEL_CLIENTS = 4

Figures = dict[str, float]
#: (pid, tid) -> (role, thread name, CPU seconds so far)
Threads = dict[tuple[int, int], tuple[str, str, float]]

#: (label, key, format); throughput rows, then CPU rows per workload.
WORKLOADS = (
    ("batched produce msg/s", "produce", "produce_msg_per_s", "{:,.0f}"),
    ("consume just-written backlog msg/s", "consume", "consume_msg_per_s", "{:,.0f}"),
    (f"batched produce, {PARALLEL_CLIENTS} clients at once, msg/s", "parallel", "parallel_msg_per_s",
     "{:,.0f}"),
    ("64 KiB produce MB/s", "large", "large_mb_per_s", "{:.1f}"),
    (f"producers created on new topics per s ({PRODUCERS_TO_CREATE:,})", "create",
     "create_per_s", "{:,.0f}"),
)
FIGURES = tuple((label, key, fmt) for label, _, key, fmt in WORKLOADS) + (
    ("unbatched sync publish p50 ms", "sync_p50_ms", "{:.3f}"),
) + tuple(
    (f"{prefix}: {who} CPU % of a core", f"{prefix}_{role}_cpu_pct", "{:.0f}")
    for _, prefix, _, _ in WORKLOADS
    for who, role in (("broker process", "broker"), ("bookie process", "bookie"),
                      ("whole machine", "machine"))
)


def _stat_fields(path: pathlib.Path) -> tuple[str, list[str]] | None:
    """(command name, fields after it) of a /proc stat file; None if it vanished."""
    try:
        text = path.read_text()
    except OSError:
        return None
    head, _, rest = text.rpartition(")")
    return head.partition("(")[2], rest.split()


def children_of(pid: int) -> list[int]:
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            stat = _stat_fields(entry / "stat")
            if stat is not None and int(stat[1][1]) == pid:
                found.append(int(entry.name))
    return found


def threads(pid: int) -> Threads:
    """CPU seconds per thread of the standalone (role broker) and of its children (bookie)."""
    tick = os.sysconf("SC_CLK_TCK")
    result: Threads = {}
    for role, owner in [("broker", pid)] + [("bookie", c) for c in children_of(pid)]:
        for task in pathlib.Path(f"/proc/{owner}/task").glob("*"):
            stat = _stat_fields(task / "stat")
            if stat is not None:
                name, fields = stat
                result[(owner, int(task.name))] = (role, name,
                                                   (int(fields[11]) + int(fields[12])) / tick)
    return result


def cpu_used(before: Threads, after: Threads, seconds: float, prefix: str) -> Figures:
    """% of a core per role (`<prefix>_<role>_cpu_pct`) and per thread name
    (`<prefix>_thread:<role>:<name>`) between two snapshots."""
    per_role: dict[str, float] = collections.defaultdict(float)
    per_thread: dict[str, float] = collections.defaultdict(float)
    for key, (role, name, used) in after.items():
        delta = used - before.get(key, (role, name, 0.0))[2]
        per_role[role] += delta
        per_thread[f"{role}:{name}"] += delta
    figures = {f"{prefix}_{role}_cpu_pct": 100 * used / seconds for role, used in per_role.items()}
    figures.update({f"{prefix}_thread:{name}": 100 * used / seconds
                    for name, used in per_thread.items()})
    return figures


def machine_busy_s() -> float:
    """CPU seconds all cores of the machine have spent busy (not idle nor iowait) so far."""
    fields = [int(v) for v in pathlib.Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _measured(broker: broker_servers.Broker, prefix: str,
              work: Callable[[], tuple[Figures, float]]) -> Figures:
    """work() -> (figures, its own busy seconds); adds the CPU of broker, bookie, their
    threads and the whole machine over that time, as % of one core."""
    before, machine_before, started = threads(broker.pid), machine_busy_s(), time.monotonic()
    figures, seconds = work()
    after, machine_after = threads(broker.pid), machine_busy_s()
    figures.update(cpu_used(before, after, seconds, prefix))
    # Over the whole step, the client processes' start-up included: the machine's load then.
    figures[f"{prefix}_machine_cpu_pct"] = (100 * (machine_after - machine_before)
                                            / (time.monotonic() - started))
    return figures


def parallel_produce(url: str, topic: str, seconds: float) -> tuple[Figures, float]:
    """PARALLEL_CLIENTS batched producers in their own processes, each on its own topic."""
    with concurrent.futures.ThreadPoolExecutor(PARALLEL_CLIENTS) as pool:
        results = list(pool.map(lambda i: broker_vs_lite.run_workload(
            url, "batched_produce", f"{topic}-{i}", seconds, BATCHED_MAX_MESSAGES),
            range(PARALLEL_CLIENTS)))
    elapsed = max(r["messages"] / r["msg_per_s"] for r in results)
    return {"parallel_msg_per_s": sum(r["messages"] for r in results) / elapsed}, elapsed


def workloads(broker: broker_servers.Broker, seconds: float) -> Figures:
    url = broker.service_url
    topic = f"persistent://public/default/cores-{int(time.time() * 1000)}"
    run = broker_vs_lite.run_workload
    figures: Figures = {}
    run(url, "subscribe", topic, seconds, 0, "--subscription", SUBSCRIPTION)

    def produce() -> tuple[Figures, float]:
        done = run(url, "batched_produce", topic, seconds, BATCHED_MAX_MESSAGES)
        figures["backlog_messages"] = done["messages"]
        return {"produce_msg_per_s": done["msg_per_s"]}, done["messages"] / done["msg_per_s"]

    def consume() -> tuple[Figures, float]:
        done = run(url, "catchup_consume", topic, 2 * seconds + 5, int(figures["backlog_messages"]),
                   "--subscription", SUBSCRIPTION)
        return {"consume_msg_per_s": done["msg_per_s"]}, done["messages"] / done["msg_per_s"]

    def large() -> tuple[Figures, float]:
        done = run(url, "large_produce", topic + "-64k", seconds, LARGE_MAX_MESSAGES)
        return {"large_mb_per_s": done["mb_per_s"]}, done["seconds"]

    def create() -> tuple[Figures, float]:
        done = run(url, "create_producers", topic + "-p", CREATE_TIMEOUT_S, PRODUCERS_TO_CREATE)
        return {"create_per_s": done["per_s"]}, done["seconds"]

    figures.update(_measured(broker, "produce", produce))
    figures.update(_measured(broker, "consume", consume))
    figures["sync_p50_ms"] = run(url, "sync_latency", topic + "-sync", seconds,
                                 LATENCY_MAX_SENDS)["p50_ms"]
    figures.update(_measured(broker, "parallel", lambda: parallel_produce(
        url, topic + "-parallel", seconds)))
    figures.update(_measured(broker, "large", large))
    # Last: the topics it creates stay loaded in the broker.
    figures.update(_measured(broker, "create", create))
    return figures


def configurations(modes: list[str], cpus: list[str]) -> list[str]:
    return [f"{mode}@{cpu}" for cpu in cpus for mode in modes]


def _cores(cpu_list: str) -> str:
    count = sum(len(range(int(a), int(b or a) + 1)) for a, _, b in
                (part.partition("-") for part in cpu_list.split(",")))
    return f"{count} core{'s' if count > 1 else ''} ({cpu_list})"


def measure(names: list[str], base: pathlib.Path, seconds: float, rounds: int,
            log: Callable[[str], None]) -> dict[str, list[Figures]]:
    every: dict[str, list[Figures]] = {name: [] for name in names}
    for index in range(rounds):
        order = names if index % 2 == 0 else list(reversed(names))
        for name in order:
            mode, _, cpus = name.partition("@")
            directory = base / f"{mode}-{cpus.replace(',', '_')}-{index}"
            log(f"  round {index + 1}/{rounds}: {mode}, {_cores(cpus)}"
                f" (load average {os.getloadavg()[0]:.1f})")
            broker = broker_servers.start_ours(directory, journal_sync=True, cpus=cpus,
                                               overrides=MODES[mode])
            try:
                figures = workloads(broker, seconds)
            except (RuntimeError, TimeoutError, ValueError) as exc:
                log(f"    failed: {exc}")
                continue
            finally:
                broker.stop()
                shutil.rmtree(directory, ignore_errors=True)
            log("    " + ", ".join(f"{label} {fmt.format(figures.get(key, 0.0))}"
                                   for label, key, fmt in FIGURES))
            every[name].append(figures)
    return every


def best(rounds: list[Figures]) -> Figures:
    """Per workload the best round's throughput with that round's CPU figures; best p50."""
    if not rounds:
        return {}
    result: Figures = {"sync_p50_ms": min(r["sync_p50_ms"] for r in rounds)}
    for _, prefix, key, _ in WORKLOADS:
        top = max(rounds, key=lambda r: r.get(key, 0.0))
        result.update({k: v for k, v in top.items() if k.startswith(prefix) or k == key})
    return result


def render(results: dict[str, Figures]) -> list[str]:
    names = list(results)
    header = "| figure | " + " | ".join(
        f"{n.partition('@')[0]}, {_cores(n.partition('@')[2])}" for n in names) + " |"
    lines = [header, "|---" * (len(names) + 1) + "|"]
    for label, key, fmt in FIGURES:
        cells = [fmt.format(results[n][key]) if key in results[n] else "-" for n in names]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines.append("")
    for _, workload, _, _ in WORKLOADS:
        for name in names:
            prefix = f"{workload}_thread:"
            busiest = sorted(((k[len(prefix):], v) for k, v in results[name].items()
                              if k.startswith(prefix) and v >= 0.5),
                             key=lambda kv: -kv[1])[:2 * TOP_THREADS]
            lines.append(f"{workload}, {name}: " + ", ".join(f"{t} {v:.0f}%" for t, v in busiest))
    return lines


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench cores")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cpus", action="append", help="taskset CPU lists (repeatable)")
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args(argv)
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"unknown modes {unknown}; known: {list(MODES)}")
    names = configurations(modes, args.cpus or list(DEFAULT_CPUS))
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with tempfile.TemporaryDirectory(prefix="bench-cores-") as tmp:
        every = measure(names, pathlib.Path(tmp), args.seconds, args.rounds,
                        lambda line: print(line, flush=True))
    results = {name: best(rounds) for name, rounds in every.items()}
    print()
    for line in render(results):
        print(line)


def main() -> None:
    import sys

    run(sys.argv[1:])


if __name__ == "__main__":
    main()
