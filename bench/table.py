"""Issue 16's table: our `pulsar standalone` next to pulsar-lite, with the disk beside them.

One row per workload: ours | lite | ratio | goal | met?, with the load
average. Ours runs with its default configuration (journalSyncData on: every
acknowledged entry fdatasync'ed); pulsar-lite does not fsync before
acknowledging, which is why the latency goal allows ours one fsync more. The
brokers and their client workloads are those of bench.broker_vs_lite
(servers in broker_servers.py, one client process per workload in
broker_workloads.py); rounds alternate between the brokers and each figure is
the best round. The disk is measured in the same data directory in every
round: the p50 and p99 of a 4 KiB append + fdatasync, and the bandwidth of sequential
1 MiB writes each followed by fdatasync, written with O_DIRECT as our journal writes
(the best a journal on it can do) and, for reference, through the page cache; the
table shows their medians over the run.

    python -m bench table [--seconds S] [--rounds N] [--compare REV] [--profile DIR]

`--compare REV` runs our workloads on another git revision too (a temporary
`git worktree`, its services on PYTHONPATH), alternating with this tree, and
prints its figures beside ours; a directory instead of REV is used as the
source tree as it is (e.g. a worktree with an experiment not committed). `--profile DIR` runs only this tree's broker,
one round, each workload under py-spy, and prints where the broker's time goes
(bench.broker_profile); the figures of a profiled round are not comparable.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator

from bench import bookie_engine, broker_core, broker_profile, broker_servers, broker_vs_lite

REPO = pathlib.Path(__file__).resolve().parents[1]
#: High enough that the seconds, not the count, end the batched produce on a quiet machine.
BATCHED_MAX_MESSAGES = 1_500_000
LATENCY_MAX_SENDS = 3000
LARGE_MAX_MESSAGES = 5000
#: 64 KiB messages written (2 GiB) before the sustained 64 KiB row is measured: past what a
#: fresh broker's first writes get cheaply (page cache the kernel has not handed out before).
LARGE_WARMUP_MESSAGES = 32_768
LARGE_WARMUP_TIMEOUT_S = 60.0
#: High enough that the seconds, not the count, end the sustained 64 KiB produce.
LARGE_SUSTAINED_MAX_MESSAGES = 100_000
PRODUCERS_TO_CREATE = 2000
CREATE_TIMEOUT_S = 120.0
DISK_FSYNC_SAMPLES = 500
DISK_FSYNC_BLOCK_BYTES = 4096
DISK_BANDWIDTH_SECONDS = 1.0
SUBSCRIPTION = "bench-tail"

Figures = dict[str, float]


Bound = Callable[[Figures, Figures, Figures], float | None]


@dataclasses.dataclass(frozen=True)
class Row:
    """One line of the table: ours must be at least (higher_is_better) or at most `bound`
    (from ours, lite and the disk; None when a figure is missing); `goal` says it in words."""

    label: str
    key: str
    higher_is_better: bool
    goal: str
    bound: Bound

    def met(self, ours: Figures, lite: Figures, disk: Figures) -> tuple[float, bool] | None:
        bound = self.bound(ours, lite, disk)
        if bound is None or self.key not in ours:
            return None
        value = ours[self.key]
        return bound, value >= bound if self.higher_is_better else value <= bound


def _times(factor: float, key: str, source: str) -> Bound:
    """factor x a figure of lite's, ours' or the disk's."""
    def bound(ours: Figures, lite: Figures, disk: Figures) -> float | None:
        value = {"ours": ours, "lite": lite, "disk": disk}[source].get(key)
        return None if value is None else factor * value
    return bound


def _lite_plus_fsync(ours: Figures, lite: Figures, disk: Figures) -> float | None:
    if "sync_p50_ms" not in lite or "fsync_p50_ms" not in disk:
        return None
    return lite["sync_p50_ms"] + disk["fsync_p50_ms"]


ROWS = (
    Row("batched produce msg/s (1000/batch, 1 ms)", "produce_msg_per_s", True,
        ">= 1.2x lite", _times(1.2, "produce_msg_per_s", "lite")),
    Row("consume just-written backlog msg/s", "consume_msg_per_s", True,
        ">= 1.0x lite", _times(1.0, "consume_msg_per_s", "lite")),
    Row("unbatched sync publish p50 ms", "sync_p50_ms", False,
        "<= lite p50 + fsync p50", _lite_plus_fsync),
    Row("unbatched sync publish p99 ms", "sync_p99_ms", False,
        "<= 2x our p50", _times(2.0, "sync_p50_ms", "ours")),
    Row(f"create {PRODUCERS_TO_CREATE:,} producers, new topics /s", "create_per_s", True,
        ">= 1.0x lite", _times(1.0, "create_per_s", "lite")),
    Row("64 KiB unbatched produce MB/s", "large_mb_per_s", True,
        ">= 1.0x lite", _times(1.0, "large_mb_per_s", "lite")),
    Row("64 KiB unbatched produce MB/s, vs the disk", "large_mb_per_s", True,
        ">= 0.5x disk seq write", _times(0.5, "seq_write_mb_per_s", "disk")),
    Row("64 KiB produce MB/s, sustained (after 2 GiB)", "large_sustained_mb_per_s", True,
        ">= 1.0x lite", _times(1.0, "large_sustained_mb_per_s", "lite")),
)
#: The broker process's CPU per unit of work, printed under the table (no goal).
CPU_ROWS = (
    ("per produced msg", "batched_produce_cpu_us", False),
    ("per consumed msg", "catchup_consume_cpu_us", False),
    ("per sync send", "sync_latency_cpu_us", False),
    ("per 64 KiB MB", "large_produce_cpu_us", False),
    ("per 64 KiB MB, sustained", "large_sustained_cpu_us", False),
    ("per producer", "create_producers_cpu_us", False),
)
#: How busy the client process and the broker were, in % of one core, over a workload:
#: a client near 100% bounds the rate whatever the broker does (no goal; printed to tell).
BUSY_ROWS = (
    ("client busy % (batched produce)", "batched_produce_client_busy"),
    ("client's send thread busy % (batched produce)", "batched_produce_client_thread_busy"),
    ("broker busy % (batched produce)", "batched_produce_broker_busy"),
    ("client busy % (consume)", "catchup_consume_client_busy"),
    ("broker busy % (consume)", "catchup_consume_broker_busy"),
    ("client busy % (64 KiB produce)", "large_produce_client_busy"),
    ("client's send thread busy % (64 KiB produce)", "large_produce_client_thread_busy"),
    ("broker busy % (64 KiB produce)", "large_produce_broker_busy"),
)
DISK_ROWS = (
    ("disk: 4 KiB append + fdatasync p50 ms", "fsync_p50_ms", False),
    ("disk: 4 KiB append + fdatasync p99 ms", "fsync_p99_ms", False),
    ("disk: sequential write MB/s (1 MiB O_DIRECT + fdatasync)", "seq_write_mb_per_s", True),
    ("disk: the same through the page cache MB/s", "seq_write_cached_mb_per_s", True),
)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def disk_fsync_ms(directory: pathlib.Path) -> tuple[float, float]:
    """p50 and p99 of the time of a 4 KiB append followed by fdatasync, in `directory`."""
    path = directory / "disk-fsync-probe"
    block = os.urandom(DISK_FSYNC_BLOCK_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    times: list[float] = []
    try:
        for _ in range(DISK_FSYNC_SAMPLES):
            started = time.perf_counter()
            os.write(fd, block)
            os.fdatasync(fd)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        os.close(fd)
        path.unlink()
    times.sort()
    return times[len(times) // 2], times[len(times) * 99 // 100]


def measure_disk(directory: pathlib.Path) -> Figures:
    p50, p99 = disk_fsync_ms(directory)
    return {
        "fsync_p50_ms": p50,
        "fsync_p99_ms": p99,
        "seq_write_mb_per_s": bookie_engine.disk_fdatasync_bandwidth(
            directory, DISK_BANDWIDTH_SECONDS),
        "seq_write_cached_mb_per_s": bookie_engine.disk_fdatasync_bandwidth(
            directory, DISK_BANDWIDTH_SECONDS, direct=False),
    }


def _workloads(
    broker: broker_servers.Broker, seconds: float, log: Callable[[str], None],
    around: Callable[[str], contextlib.AbstractContextManager[None]],
) -> Figures:
    """The workloads against one broker, in order, on fresh topics; keyed as in ROWS, plus the
    broker's CPU microseconds per message (per producer, per MB) of each, keyed `<name>_cpu_us`.

    The subscription is made before the batched produce, so the consume reads a
    backlog that was just written (the broker may still hold it in memory).
    `around(name)` wraps each workload (a profiler, or nothing)."""
    url = broker.service_url
    topic = f"persistent://public/default/table-{int(time.time() * 1000)}"
    figures: Figures = {}

    def step(name: str, per: str, topic: str, seconds: float, most: int, *extra: str,
             key: str = "") -> Figures:
        """Run workload `name`; its figures are keyed by `key` (default: the name)."""
        with around(name):
            before = broker_servers.cpu_s(broker.pid)
            result = broker_vs_lite.run_workload(url, name, topic, seconds, most, *extra)
            used = broker_servers.cpu_s(broker.pid) - before
        prefix = key or name
        figures[f"{prefix}_cpu_us"] = 1e6 * used / max(result[per], 1e-9)
        if "seconds" in result:
            figures[f"{prefix}_client_busy"] = 100 * result["client_cpu_s"] / max(
                result["seconds"], 1e-9)
            figures[f"{prefix}_broker_busy"] = 100 * used / max(result["seconds"], 1e-9)
            figures[f"{prefix}_client_thread_busy"] = 100 * result.get(
                "client_thread_cpu_s", 0.0) / max(result["seconds"], 1e-9)
        return result

    broker_vs_lite.run_workload(url, "subscribe", topic, seconds, 0, "--subscription", SUBSCRIPTION)
    produced = step("batched_produce", "messages", topic, seconds, BATCHED_MAX_MESSAGES)
    figures["produce_msg_per_s"] = produced["msg_per_s"]
    consumed = step("catchup_consume", "messages", topic, 2 * seconds + 5,
                    int(produced["messages"]), "--subscription", SUBSCRIPTION)
    figures["consume_msg_per_s"] = consumed["msg_per_s"]
    latency = step("sync_latency", "messages", topic + "-sync", seconds, LATENCY_MAX_SENDS)
    figures["sync_p50_ms"] = latency["p50_ms"]
    figures["sync_p99_ms"] = latency["p99_ms"]
    large = step("large_produce", "mb", topic + "-64k", seconds, LARGE_MAX_MESSAGES)
    figures["large_mb_per_s"] = large["mb_per_s"]
    # The same after 2 GiB more: the rate a broker keeps up once its first writes are behind it.
    broker_vs_lite.run_workload(url, "large_produce", topic + "-64k-warm", LARGE_WARMUP_TIMEOUT_S,
                                LARGE_WARMUP_MESSAGES)
    sustained = step("large_produce", "mb", topic + "-64k-sustained", seconds,
                     LARGE_SUSTAINED_MAX_MESSAGES, key="large_sustained")
    figures["large_sustained_mb_per_s"] = sustained["mb_per_s"]
    # Last: the 2,000 topics it creates stay loaded in the broker.
    created = step("create_producers", "producers", topic + "-p", CREATE_TIMEOUT_S,
                   PRODUCERS_TO_CREATE)
    figures["create_per_s"] = created["per_s"]
    log(f"    {produced['messages']:.0f} msgs produced at {produced['msg_per_s']:,.0f}/s,"
        f" consumed at {consumed['msg_per_s']:,.0f}/s; sync p50 {latency['p50_ms']:.3f}"
        f" p99 {latency['p99_ms']:.3f} ms ({latency['messages']:.0f} sends);"
        f" 64 KiB {large['mb_per_s']:.0f} MB/s, sustained {sustained['mb_per_s']:.0f} MB/s;"
        f" {created['per_s']:,.0f} producers/s")
    log("    broker CPU: " + ", ".join(f"{label} {figures[key]:,.1f} us" for label, key, _ in
                                       CPU_ROWS))
    return figures


@contextlib.contextmanager
def _nothing(name: str) -> Iterator[None]:
    yield


@contextlib.contextmanager
def _python_path(tree: pathlib.Path | None) -> Iterator[None]:
    """PYTHONPATH at `tree`'s packages while a broker process starts (it inherits os.environ)."""
    if tree is None:
        yield
        return
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(str(tree / d) for d in broker_core.PACKAGE_DIRS)
    try:
        yield
    finally:
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved


@contextlib.contextmanager
def _worktree(rev: str | None, base: pathlib.Path) -> Iterator[pathlib.Path | None]:
    """A detached `git worktree` of `rev` under `base`, removed afterwards; a directory
    given instead of a revision (a source tree with uncommitted work) is used as it is."""
    if rev is None:
        yield None
        return
    if pathlib.Path(rev).is_dir():
        yield pathlib.Path(rev).resolve()
        return
    path = base / "compare-tree"
    added = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path), rev],
                           check=False, capture_output=True, text=True)
    if added.returncode != 0:
        raise SystemExit(f"--compare {rev}: git worktree add failed: {added.stderr.strip()}")
    try:
        yield path
    finally:
        # Only this worktree: a `git worktree prune` would touch other people's entries.
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(path)],
                       check=False, capture_output=True)


def _start(name: str, directory: pathlib.Path, tree: pathlib.Path | None,
           log: Callable[[str], None]) -> broker_servers.Broker | None:
    try:
        if name == "lite":
            broker: broker_servers.Broker = broker_servers.LiteBroker(directory).start()
        else:
            with _python_path(tree):
                broker = broker_servers.start_ours(directory, journal_sync=True)
        log(f"  {name}: started at {broker.service_url}")
        return broker
    except (RuntimeError, TimeoutError, OSError, ImportError) as exc:
        log(f"  {name}: did not start: {exc}")
        return None


def measure(brokers: dict[str, broker_servers.Broker], base: pathlib.Path, seconds: float,
            rounds: int, log: Callable[[str], None]) -> tuple[dict[str, Figures], Figures]:
    """Rounds alternating over the brokers, the disk measured before each; best per figure."""
    every: dict[str, list[Figures]] = {name: [] for name in brokers}
    disk_rounds: list[Figures] = []
    failed: set[str] = set()
    for index in range(rounds):
        order = list(brokers) if index % 2 == 0 else list(reversed(brokers))
        for name in order:
            if name in failed:
                continue
            disk_rounds.append(measure_disk(base))
            log(f"  round {index + 1}/{rounds}: {name} (load average {load_average()};"
                f" disk fsync p50 {disk_rounds[-1]['fsync_p50_ms']:.3f}"
                f" p99 {disk_rounds[-1]['fsync_p99_ms']:.3f} ms,"
                f" {disk_rounds[-1]['seq_write_mb_per_s']:.0f} MB/s direct,"
                f" {disk_rounds[-1]['seq_write_cached_mb_per_s']:.0f} through the page cache)")
            try:
                every[name].append(_workloads(brokers[name], seconds, log, _nothing))
            except (RuntimeError, TimeoutError, subprocess.TimeoutExpired, ValueError) as exc:
                log(f"  {name}: workload failed: {exc}")
                failed.add(name)
    keys = [(row.key, row.higher_is_better) for row in ROWS] + [(k, h) for _, k, h in CPU_ROWS]
    best = {name: _best(figures, keys) for name, figures in every.items() if figures}
    for name, figures in every.items():
        if figures:
            best[name].update(_busy_of_best_rounds(figures))
    # The disk is a reference, not a contestant: its median over the run, not its best moment.
    disk = {key: statistics.median(d[key] for d in disk_rounds)
            for _, key, _ in DISK_ROWS if disk_rounds}
    return best, disk


#: Which figure picks the round whose busy shares are shown, per workload.
_BUSY_RATE_KEYS = {"batched_produce": "produce_msg_per_s", "catchup_consume": "consume_msg_per_s",
                   "large_produce": "large_mb_per_s"}


def _busy_of_best_rounds(rounds: list[Figures]) -> Figures:
    """The client's and broker's busy shares of each workload, from its fastest round."""
    shown: Figures = {}
    for workload, rate_key in _BUSY_RATE_KEYS.items():
        fastest = max(rounds, key=lambda figures: figures.get(rate_key, 0.0))
        for side in ("client", "client_thread", "broker"):
            key = f"{workload}_{side}_busy"
            if key in fastest:
                shown[key] = fastest[key]
    return shown


def _best(rounds: list[Figures], keys: list[tuple[str, bool]]) -> Figures:
    """Per figure, the best round: the machine is shared, so noise only ever makes things worse."""
    best: Figures = {}
    for key, higher_is_better in keys:
        values = [r[key] for r in rounds if key in r]
        if values:
            best[key] = max(values) if higher_is_better else min(values)
    return best


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.3f}"


def render(results: dict[str, Figures], disk: Figures, compare_name: str | None) -> list[str]:
    """The table: workload | ours | lite | ratio | goal | met? (| the compared revision)."""
    ours, lite = results.get("ours", {}), results.get("lite", {})
    other = results.get(compare_name, {}) if compare_name else {}
    header = f"{'workload':<44}{'ours':>11}{'lite':>11}{'ratio':>8}  {'goal (its bound)':<36}{'met?':<5}"
    if compare_name:
        header += f"{compare_name:>13}{'ours/that':>10}"
    lines = [header, "-" * len(header)]
    for row in ROWS:
        value, peer = ours.get(row.key), lite.get(row.key)
        ratio = f"{value / peer:.2f}x" if value is not None and peer else "-"
        met = row.met(ours, lite, disk)
        goal = row.goal if met is None else f"{row.goal} ({_cell(met[0])})"
        line = (f"{row.label:<44}{_cell(value):>11}{_cell(peer):>11}{ratio:>8}  {goal:<36}"
                f"{'-' if met is None else 'yes' if met[1] else 'NO':<5}")
        if compare_name:
            that = other.get(row.key)
            line += f"{_cell(that):>13}"
            line += f"{value / that:>9.2f}x" if value is not None and that else f"{'-':>10}"
        lines.append(line)
    for label, key, _ in CPU_ROWS:
        value, peer = ours.get(key), lite.get(key)
        ratio = f"{value / peer:.2f}x" if value is not None and peer else "-"
        line = f"{'broker CPU us ' + label:<44}{_cell(value):>11}{_cell(peer):>11}{ratio:>8}"
        if compare_name:
            that = other.get(key)
            line += f"{'':<41}{_cell(that):>13}"
        lines.append(line)
    for label, key in BUSY_ROWS:
        lines.append(f"{label:<44}{_cell(ours.get(key)):>11}{_cell(lite.get(key)):>11}")
    for label, key, _ in DISK_ROWS:
        lines.append(f"{label:<44}{_cell(disk.get(key)):>11}")
    return lines


def profile(base: pathlib.Path, seconds: float, out: pathlib.Path,
            log: Callable[[str], None]) -> None:
    """One round against this tree's broker with each workload under py-spy; top costs each."""
    out.mkdir(parents=True, exist_ok=True)
    broker = broker_servers.start_ours(base / "ours", journal_sync=True)
    assert isinstance(broker, broker_servers.OursBroker)
    recorded: list[tuple[str, pathlib.Path]] = []

    @contextlib.contextmanager
    def under_py_spy(name: str) -> Iterator[None]:
        path = out / f"{name}.txt"
        with broker_profile.recording(broker.process.pid, path):
            yield
        recorded.append((name, path))

    try:
        _workloads(broker, seconds, log, under_py_spy)
    finally:
        broker.stop()
    for name, path in recorded:
        log(f"--- {name} ({path})")
        for line in broker_profile.summary(path):
            log(line)


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench table")
    parser.add_argument("--seconds", type=float, default=3.0,
                        help="seconds per throughput or latency workload (default 3)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="rounds per broker; the best is shown (default 2)")
    parser.add_argument("--compare", metavar="REV", default=None,
                        help="also run our workloads on this git revision (or source tree"
                             " directory), alternating")
    parser.add_argument("--profile", metavar="DIR", default=None,
                        help="profile this tree's broker under each workload instead (py-spy)")
    parser.add_argument("--dir", default=None, help="where the temp data dirs go")
    args, _ = parser.parse_known_args(argv)

    def log(line: str) -> None:
        print(line, flush=True)

    base = pathlib.Path(tempfile.mkdtemp(prefix="bench-table-", dir=args.dir))
    started = time.monotonic()
    log(f"issue 16 table: ours (fsync on) vs pulsar-lite {broker_servers.lite_version()};"
        f" {args.seconds:g} s per workload, best of {args.rounds} rounds; load average"
        f" {load_average()}; data in {base}")
    brokers: dict[str, broker_servers.Broker] = {}
    try:
        if args.profile:
            profile(base, args.seconds, pathlib.Path(args.profile), log)
            return
        with _worktree(args.compare, base) as tree:
            names = ["ours", "lite"] + ([args.compare] if tree else [])
            for name in names:
                broker = _start(name, base / f"broker-{len(brokers)}", tree if name ==
                                args.compare else None, log)
                if broker is not None:
                    brokers[name] = broker
            results, disk = measure(brokers, base, args.seconds, args.rounds, log)
            for broker in brokers.values():
                broker.stop()
            brokers = {}
        for line in render(results, disk, args.compare):
            log(line)
        log(f"load average at the end {load_average()}; took {time.monotonic() - started:.0f} s")
    finally:
        for broker in brokers.values():
            broker.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    run(sys.argv[1:])
