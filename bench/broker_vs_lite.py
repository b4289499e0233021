"""Our `pulsar standalone` next to pulsar-lite, with the same official-client workloads.

Each broker runs as its own process on free ports with a fresh data dir; each
workload runs in a separate client process (bench.broker_workloads). All
brokers are started first and the rounds alternate between them, so that the
load of a shared machine falls on each alike; each figure is the best round.
Ours runs twice, with journalSyncData=true (every acknowledged entry
fdatasync'ed) and false; pulsar-lite does not fsync before acknowledging.
Printed side by side with the ratio ours / pulsar-lite:

- batched produce msg/s: 100 B messages, batches of up to 1000, 1 ms delay
- catch-up consume msg/s: a new subscription reading that backlog from the start,
  after a broker restart (so from storage, not from the broker's cache)
- unbatched synchronous publish p50 / p99 ms: one send at a time, no batching
- 64 KiB produce MB/s: unbatched, 256 in flight

    python -m bench.broker_vs_lite [--seconds S] [--rounds N] [--targets ours-fsync,ours-nofsync,lite]
    python -m bench broker_vs_lite

Targets recorded in issue 3: batched produce and consume >= 0.8x pulsar-lite;
unbatched p50 with fsync off <= 2x pulsar-lite.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench import broker_servers

REPO = pathlib.Path(__file__).resolve().parents[1]
WORKLOAD_GRACE_S = 60.0
BATCHED_MAX_MESSAGES = 400_000
LATENCY_MAX_SENDS = 3000
LARGE_MAX_MESSAGES = 5000
TARGETS = ("ours-fsync", "ours-nofsync", "lite")


@dataclass(frozen=True)
class Figure:
    label: str
    key: str
    higher_is_better: bool


FIGURES = (
    Figure("batched produce msg/s", "produce_msg_per_s", True),
    Figure("catch-up consume msg/s", "consume_msg_per_s", True),
    Figure("unbatched sync publish p50 ms", "sync_p50_ms", False),
    Figure("unbatched sync publish p99 ms", "sync_p99_ms", False),
    Figure("64 KiB produce MB/s", "large_mb_per_s", True),
)


def run_workload(
    url: str, workload: str, topic: str, seconds: float, max_messages: int, *extra: str
) -> dict[str, float]:
    """One workload in a fresh client process; its JSON result. `extra`: more of its options."""
    args = [
        sys.executable,
        "-m",
        "bench.broker_workloads",
        workload,
        "--url",
        url,
        "--topic",
        topic,
        "--seconds",
        str(seconds),
        "--max-messages",
        str(max_messages),
        *extra,
    ]
    done = subprocess.run(
        args,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=seconds + WORKLOAD_GRACE_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{workload} exited {done.returncode}: {done.stderr[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure_round(
    broker: broker_servers.Broker, seconds: float, log: Callable[[str], None]
) -> dict[str, float]:
    """The four workloads against one broker, in order, on fresh topics; keyed as in FIGURES.

    The broker is restarted between the batched produce and the catch-up
    consume, so that the backlog is read from storage, not from its cache.
    """
    url = broker.service_url
    topic = f"persistent://public/default/bench-{int(time.time() * 1000)}"
    figures: dict[str, float] = {}
    produced = run_workload(url, "batched_produce", topic, seconds, BATCHED_MAX_MESSAGES)
    figures["produce_msg_per_s"] = produced["msg_per_s"]
    log(f"    batched produce: {produced['messages']:.0f} msgs, {produced['msg_per_s']:,.0f} msg/s")
    broker.restart()
    url = broker.service_url
    consumed = run_workload(
        url, "catchup_consume", topic, 2 * seconds + 5, int(produced["messages"])
    )
    figures["consume_msg_per_s"] = consumed["msg_per_s"]
    log(
        f"    catch-up consume: {consumed['messages']:.0f} msgs, {consumed['msg_per_s']:,.0f} msg/s"
    )
    latency = run_workload(url, "sync_latency", topic + "-sync", seconds, LATENCY_MAX_SENDS)
    figures["sync_p50_ms"] = latency["p50_ms"]
    figures["sync_p99_ms"] = latency["p99_ms"]
    log(
        f"    sync publish: {latency['messages']:.0f} sends, p50 {latency['p50_ms']:.3f} ms, "
        f"p99 {latency['p99_ms']:.3f} ms"
    )
    large = run_workload(url, "large_produce", topic + "-64k", seconds, LARGE_MAX_MESSAGES)
    figures["large_mb_per_s"] = large["mb_per_s"]
    log(f"    64 KiB produce: {large['messages']:.0f} msgs, {large['mb_per_s']:.1f} MB/s")
    return figures


def best_of(
    rounds: list[dict[str, float]], figures: Sequence[Figure] = FIGURES
) -> dict[str, float]:
    """Per figure, the best round: the machine is shared, so noise only ever makes things worse."""
    best: dict[str, float] = {}
    for figure in figures:
        values = [r[figure.key] for r in rounds if figure.key in r]
        if values:
            best[figure.key] = max(values) if figure.higher_is_better else min(values)
    return best


def start_target(name: str, directory: pathlib.Path) -> broker_servers.Broker:
    if name == "lite":
        return broker_servers.LiteBroker(directory).start()
    return broker_servers.start_ours(directory, journal_sync=(name == "ours-fsync"))


def start_all(
    names: list[str], base: pathlib.Path, log: Callable[[str], None]
) -> dict[str, broker_servers.Broker]:
    brokers: dict[str, broker_servers.Broker] = {}
    for name in names:
        try:
            brokers[name] = start_target(name, base / name)
            log(f"  {name}: started at {brokers[name].service_url}")
        except (RuntimeError, TimeoutError, OSError, ImportError) as exc:
            log(f"  {name}: did not start: {exc}")
    return brokers


def measure_all(
    brokers: dict[str, broker_servers.Broker],
    seconds: float,
    rounds: int,
    log: Callable[[str], None],
) -> dict[str, list[dict[str, float]]]:
    """Rounds interleaved over the brokers (alternating order), so that a change in the
    machine's load while the bench runs falls on every broker alike."""
    measured: dict[str, list[dict[str, float]]] = {name: [] for name in brokers}
    failed: set[str] = set()
    for index in range(rounds):
        order = list(brokers) if index % 2 == 0 else list(reversed(brokers))
        for name in order:
            if name in failed:
                continue
            log(f"  round {index + 1}/{rounds}: {name}")
            try:
                measured[name].append(measure_round(brokers[name], seconds, log))
            except (RuntimeError, TimeoutError, subprocess.TimeoutExpired, ValueError) as exc:
                log(f"  {name}: workload failed: {exc}")
                failed.add(name)
    return measured


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3f}"


def _ratio(ours: float | None, lite: float | None) -> str:
    if ours is None or lite is None or lite == 0:
        return "-"
    return f"{ours / lite:.2f}x"


def table(results: dict[str, dict[str, float] | None]) -> list[str]:
    lite = results.get("lite")
    header = (
        f"{'figure':<32}{'ours fsync':>14}{'ours no fsync':>15}{'pulsar-lite':>13}"
        f"{'fsync/lite':>12}{'nofsync/lite':>14}"
    )
    lines = [header, "-" * len(header)]
    for figure in FIGURES:
        values = {name: (r or {}).get(figure.key) for name, r in results.items()}
        lite_value = (lite or {}).get(figure.key)
        lines.append(
            f"{figure.label:<32}{_cell(values.get('ours-fsync')):>14}"
            f"{_cell(values.get('ours-nofsync')):>15}{_cell(lite_value):>13}"
            f"{_ratio(values.get('ours-fsync'), lite_value):>12}"
            f"{_ratio(values.get('ours-nofsync'), lite_value):>14}"
        )
    return lines


def target_lines(results: dict[str, dict[str, float] | None]) -> list[str]:
    """The issue's targets, each with the ratio that decides it."""
    lite = results.get("lite") or {}
    checks = [
        ("batched produce >= 0.8x pulsar-lite", "produce_msg_per_s", 0.8, True),
        ("catch-up consume >= 0.8x pulsar-lite", "consume_msg_per_s", 0.8, True),
        ("unbatched p50 (fsync off) <= 2x pulsar-lite", "sync_p50_ms", 2.0, False),
    ]
    lines = []
    for text, key, bound, at_least in checks:
        names = ("ours-nofsync",) if key == "sync_p50_ms" else ("ours-fsync", "ours-nofsync")
        for name in names:
            ours = (results.get(name) or {}).get(key)
            base = lite.get(key)
            if ours is None or not base:
                lines.append(f"target {text} [{name}]: not measured")
                continue
            ratio = ours / base
            met = ratio >= bound if at_least else ratio <= bound
            lines.append(f"target {text} [{name}]: {ratio:.2f}x {'met' if met else 'NOT met'}")
    return lines


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.broker_vs_lite")
    parser.add_argument(
        "--seconds",
        type=float,
        default=3.0,
        help="seconds per throughput or latency workload (default 3)",
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds per broker; the best is shown (default 2)"
    )
    parser.add_argument(
        "--dir", default=None, help="where the temp data dirs go (default: the system temp dir)"
    )
    parser.add_argument(
        "--targets",
        default=",".join(TARGETS),
        help=f"comma separated subset of {','.join(TARGETS)}",
    )
    parser.add_argument("--keep", action="store_true", help="keep data dirs and logs")
    args, _ = parser.parse_known_args(argv)

    def log(line: str) -> None:
        print(line, flush=True)

    base = pathlib.Path(tempfile.mkdtemp(prefix="bench-broker-", dir=args.dir))
    log(
        f"broker vs pulsar-lite {broker_servers.lite_version()} ({base}); "
        f"{args.seconds:g} s per workload, best of {args.rounds} rounds"
    )
    started = time.monotonic()
    names = args.targets.split(",")
    brokers: dict[str, broker_servers.Broker] = {}
    try:
        brokers = start_all(names, base, log)
        measured = measure_all(brokers, args.seconds, args.rounds, log)
    finally:
        for broker in brokers.values():
            broker.stop()
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    results = {name: best_of(measured[name]) if measured.get(name) else None for name in names}
    for line in table(results) + target_lines(results):
        log(line)
    log(f"took {time.monotonic() - started:.0f} s")


def main() -> None:
    run(sys.argv[1:])


if __name__ == "__main__":
    main()
