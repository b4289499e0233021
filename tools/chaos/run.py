"""One chaos run: start the cluster, run the workload, attack it cycle by cycle, heal, read
every topic back and check it; write the report (JSON and markdown).

`python -m tools.chaos --cycles N [--seed S]` (or `make chaos CYCLES=N SEED=S`). The seed
is printed first; a run that fails is replayed with the same seed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import pathlib
import tempfile
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from tools.chaos import checker, nemesis, report, workload
from tools.chaos import cluster as chaos_cluster

#: How long a cycle waits, after healing, for every producer to have a send acknowledged.
RECOVERY_TIMEOUT_S = 90.0
#: How often the memory sampler reads /proc.
MEMORY_SAMPLE_INTERVAL_S = 0.5
#: How often internal stats are asked for again while the topic's broker is still
#: loading it after the last fault (for at most STATS_WAIT_S).
STATS_RETRY_S = 1.0
STATS_WAIT_S = 30.0
#: How often wait_recovered looks at the producers' last acknowledged sends.
RECOVERY_POLL_S = 0.1
#: Traffic after the last cycle's recovery, so that the run ends on a healthy cluster.
SETTLE_S = 2.0


@dataclasses.dataclass
class RunOptions:
    seed: int
    cycles: int
    data_dir: pathlib.Path | None = None
    report_dir: pathlib.Path | None = None
    #: Fault kinds left out of the schedule, each with the reason the report gives.
    excluded: dict[str, str] = dataclasses.field(default_factory=dict)


def admin(base_url: str, method: str, path: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base_url + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as reply:
        text = reply.read()
    return json.loads(text) if text else None


class MemorySampler:
    """Peak RSS (VmHWM, kept across restarts as the largest seen) of every cluster process."""

    def __init__(self, cluster: chaos_cluster.ChaosCluster) -> None:
        self.cluster = cluster
        self.peak_kib: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memory", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sample()

    def sample(self) -> None:
        for role, pid in self.cluster.processes():
            if pid is None:
                continue
            with contextlib.suppress(OSError, ValueError):
                for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        kib = int(line.split()[1])
                        self.peak_kib[role] = max(self.peak_kib.get(role, 0), kib)

    def _run(self) -> None:
        while not self._stop.wait(MEMORY_SAMPLE_INTERVAL_S):
            self.sample()


def topic_plans() -> list[workload.TopicPlan]:
    return [workload.TopicPlan(f"persistent://public/chaos-{kind}/events-{i}", kind == "dedup")
            for kind in ("dedup", "plain") for i in range(2)]


def prepare_namespaces(web_url: str) -> None:
    """The run's namespaces, with infinite retention: without it, ledgers every subscription
    has acknowledged are deleted, and the final read could not see what they held."""
    for kind in ("dedup", "plain"):
        admin(web_url, "PUT", f"/admin/v2/namespaces/public/chaos-{kind}")
        admin(web_url, "POST", f"/admin/v2/namespaces/public/chaos-{kind}/retention",
              {"retentionTimeInMinutes": -1, "retentionSizeInMB": -1})
        admin(web_url, "POST", f"/admin/v2/namespaces/public/chaos-{kind}/deduplication",
              kind == "dedup")


def internal_stats(cluster: chaos_cluster.ChaosCluster, topic: str,
                   metadata: bool = False) -> dict[str, Any] | None:
    """A topic's internal stats from whichever broker answers (a non-owner redirects)."""
    path = "/admin/v2/" + topic.replace("://", "/") + "/internalStats"
    if metadata:
        path += "?metadata=true"
    for broker in cluster.brokers:
        with contextlib.suppress(OSError, urllib.error.URLError, ValueError):
            result: dict[str, Any] = admin(broker.web_url, "GET", path)
            return result
    return None


def mark_delete_positions(cluster: chaos_cluster.ChaosCluster,
                          topics: list[workload.TopicPlan]) -> dict[tuple[str, str], str]:
    positions = {}
    for plan in topics:
        stats = internal_stats(cluster, plan.name)
        for name, cursor in (stats or {}).get("cursors", {}).items():
            if not name.startswith("reader-"):
                positions[(plan.name, name)] = str(cursor["markDeletePosition"])
    return positions


def unclosed_ledgers(cluster: chaos_cluster.ChaosCluster,
                     topics: list[workload.TopicPlan]) -> list[str]:
    """Ledgers other than a topic's last that are not CLOSED: a broker that lost the topic
    could still add to them. Each is `topic ledgerId state`."""
    found = []
    for plan in topics:
        deadline = time.monotonic() + STATS_WAIT_S
        stats = internal_stats(cluster, plan.name, metadata=True)
        while stats is None and time.monotonic() < deadline:
            time.sleep(STATS_RETRY_S)
            stats = internal_stats(cluster, plan.name, metadata=True)
        if stats is None:
            found.append(f"{plan.name} internalStats unavailable")
            continue
        for item in stats.get("ledgers", [])[:-1]:
            state = json.loads(item.get("metadata", "{}")).get("state", "unknown")
            if state != "CLOSED":
                found.append(f"{plan.name} {item['ledgerId']} {state}")
    return found


def wait_recovered(work: workload.Workload, since_s: float) -> float:
    """Seconds after since_s until every producer had a send acknowledged (or the timeout)."""
    deadline = since_s + RECOVERY_TIMEOUT_S
    while time.monotonic() < deadline:
        if all(work.history.last_success_s(p.name) > since_s for p in work.topics):
            return time.monotonic() - since_s
        time.sleep(RECOVERY_POLL_S)
    return RECOVERY_TIMEOUT_S


def run(options: RunOptions) -> dict[str, Any]:
    exclude = f" EXCLUDE={','.join(options.excluded)}" if options.excluded else ""
    print(f"chaos seed {options.seed} ({options.cycles} cycles); replay with "
          f"`make chaos SEED={options.seed} CYCLES={options.cycles}{exclude}`", flush=True)
    with contextlib.ExitStack() as stack:
        data_dir = options.data_dir or pathlib.Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="chaos-")))
        cluster = chaos_cluster.ChaosCluster(data_dir / "cluster")
        stack.callback(cluster.stop)
        started = time.monotonic()
        cluster.start()
        print(f"cluster up in {time.monotonic() - started:.1f}s", flush=True)
        result = attack(cluster, options, data_dir)
    report_dir = options.report_dir or pathlib.Path("build/chaos-report")
    report.write(result, report_dir)
    print(report.summary(result), flush=True)
    print(f"report: {report_dir / 'chaos-report.json'}, {report_dir / 'chaos-report.md'}",
          flush=True)
    return result


def attack(cluster: chaos_cluster.ChaosCluster, options: RunOptions,
           data_dir: pathlib.Path) -> dict[str, Any]:
    prepare_namespaces(cluster.web_url)
    plans = topic_plans()
    work = workload.Workload(cluster.service_url, plans, data_dir / "workload")
    work.subscribe_all()
    memory = MemorySampler(cluster)
    memory.start()
    work.start()
    run_started = time.monotonic()
    attacker = nemesis.Nemesis(cluster, options.seed, frozenset(options.excluded))
    faults: list[nemesis.Fault] = []
    samples: list[tuple[float, dict[tuple[str, str], str]]] = []
    try:
        wait_recovered(work, run_started)
        for cycle in range(options.cycles):
            fault = attacker.next_fault(cycle)
            heal = attacker.inflict(fault)
            print(f"cycle {cycle}: {fault.kind} {fault.target} for {fault.hold_s}s "
                  f"{fault.note}".rstrip(), flush=True)
            time.sleep(fault.hold_s)
            heal()
            fault.healed_s = time.monotonic()
            fault.recovered_s = wait_recovered(work, fault.healed_s)
            faults.append(fault)
            samples.append((time.monotonic(), mark_delete_positions(cluster, plans)))
        time.sleep(SETTLE_S)
    finally:
        work.stop()
        memory.stop()
    run_ended = time.monotonic()
    return evaluate(cluster, options, plans, work, faults, samples, memory.peak_kib,
                    run_started, run_ended)


def evaluate(cluster: chaos_cluster.ChaosCluster, options: RunOptions,
             plans: list[workload.TopicPlan], work: workload.Workload,
             faults: list[nemesis.Fault], samples: list[tuple[float, dict[tuple[str, str], str]]],
             peak_kib: dict[str, int], run_started: float, run_ended: float) -> dict[str, Any]:
    history = work.history
    topics = []
    evidence: dict[str, Any] = {}
    for plan in plans:
        stored = workload.read_back(cluster.service_url, plan.name)
        acked = {(a.key, a.n): a.message_id for a in history.acked.get(plan.name, [])}
        gaps = checker.unavailability(sorted(a.at_s for a in history.acked.get(plan.name, [])),
                                      run_started, run_ended)
        topics.append(dataclasses.replace(
            checker.check_topic(plan.name, plan.deduplication, acked, stored),
            unavailable_s=round(gaps[0], 2), longest_unavailable_s=round(gaps[1], 2)))
        if topics[-1].lost:
            evidence[plan.name] = internal_stats(cluster, plan.name, metadata=True)
    broker_faults = [(f.started_s, f.healed_s + f.recovered_s, f"cycle {f.cycle} {f.kind} "
                      f"{f.target}") for f in faults if f.touches_broker]
    regressions = checker.regressions(samples, broker_faults)
    unavailable_s, longest_gap_s = checker.unavailability(history.success_times(), run_started,
                                                          run_ended)
    starts = [f.started_s for f in faults] + [run_ended]
    windows = [(f.started_s, starts[i + 1], f.kind) for i, f in enumerate(faults)]
    unavailable_by_kind = checker.unavailability_by_kind(history.success_times(), windows)
    by_kind: dict[str, int] = {}
    for fault in faults:
        by_kind[fault.kind] = by_kind.get(fault.kind, 0) + 1
    skipped = {"clock-jump": nemesis.CLOCK_JUMP_SKIPPED, **options.excluded}
    if not cluster.can_fill_disks:
        skipped["disk-full"] = "no tmpfs could be mounted (not root)"
    return {
        "seed": options.seed,
        "cycles": options.cycles,
        "duration_s": round(run_ended - run_started, 1),
        "faults_by_kind": dict(sorted(by_kind.items())),
        "faults_skipped": skipped,
        "faults": [dataclasses.asdict(f) | {"started_s": round(f.started_s - run_started, 2),
                                            "healed_s": round(f.healed_s - run_started, 2),
                                            "recovered_s": round(f.recovered_s, 2)}
                   for f in faults],
        "topics": [dataclasses.asdict(t) for t in topics],
        "lost": sum(t.lost for t in topics),
        "duplicates_with_dedup": sum(t.duplicates for t in topics if t.deduplication),
        "duplicates_without_dedup": sum(t.duplicates for t in topics if not t.deduplication),
        "order_violations": sum(t.order_violations for t in topics),
        "subscription_regressions": [dataclasses.asdict(r) for r in regressions],
        "unexcused_subscription_regressions": sum(1 for r in regressions if not r.excused_by),
        "mark_delete_positions_sampled": sum(len(positions) for _, positions in samples),
        "unclosed_ledgers": unclosed_ledgers(cluster, plans),
        "unavailable_s": round(unavailable_s, 2),
        "longest_unavailable_s": round(longest_gap_s, 2),
        "unavailable_s_by_fault_kind": {kind: round(seconds, 2) for kind, seconds
                                        in sorted(unavailable_by_kind.items())},
        "acknowledged_sends": sum(t.acknowledged for t in topics),
        "failed_send_attempts": sum(history.send_failures.values()),
        "consumed": sum(history.consumed.values()),
        "read_by_readers": sum(history.read.values()),
        "workload_errors": list(history.errors),
        "internal_stats_of_topics_with_losses": evidence,
        "peak_rss_mib": {role: round(kib / 1024, 1) for role, kib in sorted(peak_kib.items())},
    }


def passed(result: dict[str, Any]) -> bool:
    return (result["lost"] == 0 and result["duplicates_with_dedup"] == 0
            and result["order_violations"] == 0
            and result["unexcused_subscription_regressions"] == 0
            and not result["unclosed_ledgers"] and not result["workload_errors"])
