"""Topic scale (issue 16): N topics, each with a producer and a consumer, in one broker.

For our `pulsar standalone` (journalSyncData on) and pulsar-lite, each in turn:

1. start the broker; its RSS (VmRSS of the process and its children, from /proc);
2. open: client processes (official client, `pulsar.asyncio`, `--clients` of them, each
   with its share of the topics) create on every new topic a producer and a consumer
   (one subscription), send one message and receive and acknowledge it;
3. idle: nothing is sent for `--idle-seconds`; RSS after it and the broker's CPU use
   during it. Memory per idle topic = (RSS idle - RSS at start) / N;
4. reload: the clients close, the broker is stopped (SIGTERM, waiting for it to exit)
   and started again on the same data directory. "Reload N topics" is the time from
   starting the broker process until every topic again has a producer and a consumer
   and has carried one new message end to end (the same client processes connect
   afresh as soon as the broker's ports are open, so no reconnection backoff is in
   it); it is split into the start (until the ports accept connections) and the topic
   loads after it. RSS after the reload, idle again.

    python -m bench topic_scale [--topics 10000] [--clients 4] [--idle-seconds 10]
    python -m bench topic_scale --targets ours --py-spy DIR   # where our CPU goes
    python -m bench topic_scale --tracemalloc --topics 2000   # where our memory goes

An idle window of 60 s or more also covers the broker's once-a-minute checks
(inactive topics, backlog quotas, compaction); the default 10 s covers its
load reports and metrics sampling. `--py-spy DIR` records our broker with
py-spy (bench.broker_profile) during the idle window and the reload and prints
where the time went; its figures are then not comparable.

`--tracemalloc` runs only our standalone, inside a wrapper that starts tracemalloc
before the broker's code and takes a snapshot when asked (a file in its directory);
snapshots before the topics and after they idled are compared, and the top
allocation sites per topic (file:line, bytes and blocks per topic) are printed. The
broker's code is unchanged; tracing slows it down, so its timings are not figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator

from bench import broker_profile, broker_servers, table

REPO = pathlib.Path(__file__).resolve().parents[1]
SUBSCRIPTION = "scale"
#: Producer and consumer creations in flight at once per client process.
OPEN_IN_FLIGHT = 64
#: A small receiver queue: each consumer receives one message at a time here.
RECEIVER_QUEUE_SIZE = 10
OPERATION_TIMEOUT_S = 60
RECEIVE_TIMEOUT_S = 60.0
#: How long one client process may take to open (or close) its share of the topics.
PHASE_TIMEOUT_S = 900.0
#: How long the broker may take to exit after SIGTERM before it is killed.
STOP_TIMEOUT_S = 120.0
#: How often the RSS is sampled (and logged) during an idle window.
IDLE_SAMPLE_S = 10.0
SNAPSHOT_POLL_S = 0.2
SNAPSHOT_TIMEOUT_S = 300.0
TRACEMALLOC_FRAMES = 8
TOP_ALLOCATIONS = 25

Figures = dict[str, float]


# --- /proc: memory and CPU of a process and its children -----------------------------------

def process_tree(pid: int) -> list[int]:
    """`pid` and all its descendants (through /proc/<pid>/task/*/children)."""
    found, pending = [], [pid]
    while pending:
        current = pending.pop()
        found.append(current)
        for task in pathlib.Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError):
                pending += [int(c) for c in (task / "children").read_text().split()]
    return found


def rss_mb(pid: int) -> float:
    """VmRSS of `pid` and its descendants, in MB (10^6 bytes)."""
    total_kb = 0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            for line in pathlib.Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
    return total_kb * 1024 / 1e6


def tree_cpu_s(pid: int) -> float:
    total = 0.0
    for member in process_tree(pid):
        with contextlib.suppress(OSError):
            total += broker_servers.cpu_s(member)
    return total


# --- the client processes --------------------------------------------------------------------

def _topics(prefix: str, first: int, count: int) -> list[str]:
    return [f"{prefix}-{index}" for index in range(first, first + count)]


async def _open(url: str, topics: list[str], marker: str) -> tuple[object, list[object], Figures]:
    """A client with a producer and a consumer on each topic, each having carried one message."""
    import pulsar
    import pulsar.asyncio

    client = pulsar.asyncio.Client(
        url, operation_timeout_seconds=OPERATION_TIMEOUT_S,
        logger=pulsar.FileLogger(pulsar.LoggerLevel.Warn, "/dev/stderr"))
    in_flight = asyncio.Semaphore(OPEN_IN_FLIGHT)
    held: list[object] = []
    errors: list[str] = []

    async def one(topic: str) -> None:
        async with in_flight:
            try:
                producer = await client.create_producer(topic, batching_enabled=False)
                consumer = await client.subscribe(topic, SUBSCRIPTION,
                                                  receiver_queue_size=RECEIVER_QUEUE_SIZE)
                held.extend((producer, consumer))
                payload = f"{marker} {topic}".encode()
                await producer.send(payload)
                # An earlier phase's message whose acknowledgement was not stored comes first.
                while True:
                    message = await asyncio.wait_for(consumer.receive(), RECEIVE_TIMEOUT_S)
                    await consumer.acknowledge(message)
                    if message.data() == payload:
                        break
            except Exception as exc:  # noqa: BLE001 - counted and reported, not fatal
                errors.append(f"{topic}: {exc!r}")

    started = time.perf_counter()
    await asyncio.gather(*(one(topic) for topic in topics))
    figures = {"seconds": time.perf_counter() - started, "failed": len(errors)}
    if errors:
        print(f"{len(errors)} topics failed, first: {errors[0]}", file=sys.stderr, flush=True)
    return client, held, figures


async def _close(client: object, held: list[object]) -> None:
    in_flight = asyncio.Semaphore(OPEN_IN_FLIGHT)

    async def one(closable: object) -> None:
        async with in_flight:
            with contextlib.suppress(Exception):
                await closable.close()  # type: ignore[attr-defined]

    await asyncio.gather(*(one(c) for c in held))
    with contextlib.suppress(Exception):
        await client.close()  # type: ignore[attr-defined]


async def _worker(prefix: str, first: int, count: int) -> None:
    """Commands on stdin, one JSON answer per command on stdout:
    `open URL MARKER` (a fresh client opens every topic), `close`, `exit`."""
    loop = asyncio.get_running_loop()
    topics = _topics(prefix, first, count)
    client: object | None = None
    held: list[object] = []
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).split()
        if not line or line[0] == "exit":
            break
        answer: Figures = {}
        if line[0] == "open":
            client, held, answer = await _open(line[1], topics, line[2])
        elif line[0] == "close" and client is not None:
            await _close(client, held)
            client, held = None, []
        print(json.dumps(answer), flush=True)
    if client is not None:
        await _close(client, held)


@dataclasses.dataclass
class Clients:
    """`count` client processes, each holding its share of the topics `prefix-0..N-1`."""

    processes: list[subprocess.Popen[str]]

    @classmethod
    def start(cls, prefix: str, topics: int, count: int) -> Clients:
        share, extra = divmod(topics, count)
        processes, first = [], 0
        for index in range(count):
            size = share + (1 if index < extra else 0)
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "bench.topic_scale", "worker", prefix, str(first),
                 str(size)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                text=True))
            first += size
        return cls(processes)

    def command(self, line: str) -> list[Figures]:
        """Send `line` to every client at once; their answers (each within PHASE_TIMEOUT_S)."""
        for process in self.processes:
            assert process.stdin is not None
            process.stdin.write(line + "\n")
            process.stdin.flush()
        answers = []
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        for process in self.processes:
            answers.append(_read_answer(process, deadline))
        return answers

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(OSError):
                assert process.stdin is not None
                process.stdin.write("exit\n")
                process.stdin.close()
        for process in self.processes:
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _read_answer(process: subprocess.Popen[str], deadline: float) -> Figures:
    assert process.stdout is not None
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(process.stdout.readline()),  # type: ignore[union-attr]
                              daemon=True)
    reader.start()
    reader.join(max(0.0, deadline - time.monotonic()))
    if not box or not box[0]:
        raise RuntimeError(f"client process {process.pid} did not answer"
                           f" (exit code {process.poll()})")
    answer: Figures = json.loads(box[0])
    return answer


# --- the brokers -------------------------------------------------------------------------

def _popen(broker: broker_servers.Broker) -> subprocess.Popen[bytes]:
    if isinstance(broker, broker_servers.OursBroker):
        assert broker.process.process is not None
        return broker.process.process
    assert isinstance(broker, broker_servers.LiteBroker) and broker.process is not None
    return broker.process


def _stop_s(broker: broker_servers.Broker) -> tuple[float, bool]:
    """SIGTERM and wait for the exit: seconds taken, and whether it exited by itself."""
    process = _popen(broker)
    started = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(STOP_TIMEOUT_S)
        clean = True
    except subprocess.TimeoutExpired:
        clean = False
    elapsed = time.perf_counter() - started
    broker.stop()
    return elapsed, clean


def _start_again(broker: broker_servers.Broker) -> None:
    if isinstance(broker, broker_servers.OursBroker):
        broker.process.start(broker_servers.OURS_START_TIMEOUT_S)
    else:
        assert isinstance(broker, broker_servers.LiteBroker)
        broker.start()


class TracedStandalone:
    """Our standalone run by `traced_main`: tracemalloc on from the start, snapshots on request."""

    def __init__(self, directory: pathlib.Path) -> None:
        from pulsar_broker import testing as broker_testing

        self.snapshots = directory / "snapshots"
        self.snapshots.mkdir(parents=True, exist_ok=True)
        snapshots = self.snapshots

        class Process(broker_testing.StandaloneProcess):
            def arguments(self) -> list[str]:
                argv = super().arguments()
                wrapper = ("import sys; sys.path.insert(0, sys.argv[1]);"
                           " from bench import topic_scale; topic_scale.traced_main(sys.argv[2:])")
                return [argv[0], "-c", wrapper, str(REPO), str(snapshots), *argv[3:]]

        self.process = Process(directory / "data", {"journalSyncData": "true"},
                               log_path=directory / "standalone.log")
        self.process.start(broker_servers.OURS_START_TIMEOUT_S)
        self.taken = 0

    def snapshot(self) -> tracemalloc.Snapshot:
        self.taken += 1
        done = self.snapshots / f"done-{self.taken}"
        (self.snapshots / f"request-{self.taken}").touch()
        deadline = time.monotonic() + SNAPSHOT_TIMEOUT_S
        while not done.exists():
            if time.monotonic() > deadline or self.process.process.poll() is not None:  # type: ignore[union-attr]
                raise RuntimeError("the traced standalone took no snapshot")
            time.sleep(SNAPSHOT_POLL_S)
        return tracemalloc.Snapshot.load(str(self.snapshots / f"snapshot-{self.taken}"))


def traced_main(argv: list[str]) -> None:
    """Entry of the traced standalone: argv = snapshot directory, then `pulsar` arguments."""
    import gc
    import runpy

    snapshots = pathlib.Path(argv[0])
    tracemalloc.start(TRACEMALLOC_FRAMES)

    def serve_requests() -> None:
        taken = 0
        while True:
            if (snapshots / f"request-{taken + 1}").exists():
                taken += 1
                gc.collect()
                tracemalloc.take_snapshot().dump(str(snapshots / f"snapshot-{taken}"))
                (snapshots / f"done-{taken}").touch()
            time.sleep(SNAPSHOT_POLL_S)

    threading.Thread(target=serve_requests, name="tracemalloc-snapshots", daemon=True).start()
    sys.argv = ["pulsar", *argv[1:]]
    runpy.run_module("pulsar_common.cli.main", run_name="__main__", alter_sys=True)


# --- one broker's run --------------------------------------------------------------------

def _open_all(clients: Clients, url: str, marker: str, topics: int) -> float:
    """Seconds until every client opened its topics; raises when a topic failed."""
    started = time.perf_counter()
    answers = clients.command(f"open {url} {marker}")
    elapsed = time.perf_counter() - started
    failed = sum(a.get("failed", 0) for a in answers)
    if failed:
        raise RuntimeError(f"{failed:.0f} of {topics} topics failed to open (see stderr)")
    return elapsed


def _idle(broker: broker_servers.Broker, seconds: float,
          log: Callable[[str], None]) -> tuple[float, float]:
    """RSS after `seconds` of idling, and the broker's CPU share of one core over them; the
    RSS and CPU share of every IDLE_SAMPLE_S on the way are logged: they still move while
    the load manager splits bundles of more than loadBalancerNamespaceBundleMaxTopics."""
    started = last = time.monotonic()
    before = last_cpu = tree_cpu_s(broker.pid)
    series = []
    while (left := seconds - (time.monotonic() - started)) > 0:
        time.sleep(min(IDLE_SAMPLE_S, left))  # a measuring window, not a wait for something
        now, cpu = time.monotonic(), tree_cpu_s(broker.pid)
        series.append(f"{rss_mb(broker.pid):.0f}/{100 * (cpu - last_cpu) / (now - last):.0f}%")
        last, last_cpu = now, cpu
    cpu_pct = 100 * (tree_cpu_s(broker.pid) - before) / seconds
    log(f"    RSS MB / CPU every {min(IDLE_SAMPLE_S, seconds):g} s while idle: {' '.join(series)}")
    return rss_mb(broker.pid), cpu_pct


def measure(name: str, broker: broker_servers.Broker, topics: int, clients_count: int,
            idle_s: float, log: Callable[[str], None],
            around: Callable[[str, int], contextlib.AbstractContextManager[None]]) -> Figures:
    """Open, idle and reload `topics` topics on `broker`; figures keyed as in FIGURE_ROWS.
    `around(phase, broker pid)` wraps the idle window and the reload (a profiler, or nothing)."""
    figures: Figures = {"rss_start_mb": rss_mb(broker.pid)}
    prefix = f"persistent://public/default/scale-{int(time.time() * 1000)}"
    clients = Clients.start(prefix, topics, clients_count)
    try:
        log(f"  {name}: RSS at start {figures['rss_start_mb']:.1f} MB; opening {topics:,} topics"
            f" ({clients_count} clients; load average {table.load_average()})")
        cpu_before = tree_cpu_s(broker.pid)
        figures["open_s"] = _open_all(clients, broker.service_url, "first", topics)
        figures["open_cpu_ms"] = 1e3 * (tree_cpu_s(broker.pid) - cpu_before) / topics
        figures["open_per_s"] = topics / figures["open_s"]
        with around("idle", broker.pid):
            figures["rss_idle_mb"], figures["idle_cpu_pct"] = _idle(broker, idle_s, log)
        figures["per_topic_kb"] = (figures["rss_idle_mb"] - figures["rss_start_mb"]) * 1e3 / topics
        log(f"  {name}: opened in {figures['open_s']:.1f} s; idle RSS"
            f" {figures['rss_idle_mb']:.1f} MB ({figures['per_topic_kb']:.1f} KB per topic),"
            f" idle CPU {figures['idle_cpu_pct']:.1f}% (load average {table.load_average()})")
        clients.command("close")
        figures["stop_s"], clean = _stop_s(broker)
        started = time.perf_counter()
        _start_again(broker)
        figures["start_s"] = time.perf_counter() - started
        figures["rss_restarted_mb"] = rss_mb(broker.pid)
        with around("reload", broker.pid):
            _open_all(clients, broker.service_url, "reload", topics)
        figures["reload_s"] = time.perf_counter() - started
        figures["rss_reloaded_mb"], _ = _idle(broker, idle_s, log)
        log(f"  {name}: stopped in {figures['stop_s']:.1f} s"
            f"{'' if clean else ' (killed: no exit after SIGTERM)'}; ports open after"
            f" {figures['start_s']:.1f} s; all topics reloaded after {figures['reload_s']:.1f} s;"
            f" RSS {figures['rss_reloaded_mb']:.1f} MB (load average {table.load_average()})")
    finally:
        clients.stop()
    return figures


#: (label, key, higher is better) of the printed table.
FIGURE_ROWS = (
    ("RSS at start MB", "rss_start_mb", False),
    ("RSS with N idle topics MB", "rss_idle_mb", False),
    ("memory per idle topic KB", "per_topic_kb", False),
    ("idle CPU % of one core", "idle_cpu_pct", False),
    ("open N topics s (producer+consumer+1 msg)", "open_s", False),
    ("open topics /s", "open_per_s", True),
    ("broker CPU ms per topic opened", "open_cpu_ms", False),
    ("stop (SIGTERM until exit) s", "stop_s", False),
    ("restart until ports open s", "start_s", False),
    ("reload N topics s (from process start)", "reload_s", False),
    ("RSS after restart, before topics MB", "rss_restarted_mb", False),
    ("RSS after reload, idle MB", "rss_reloaded_mb", False),
)


def render(results: dict[str, Figures], topics: int) -> list[str]:
    ours, lite = results.get("ours", {}), results.get("lite", {})
    header = f"{'figure (N = ' + format(topics, ',') + ')':<46}{'ours':>11}{'lite':>11}{'ratio':>8}"
    lines = [header, "-" * len(header)]
    for label, key, _ in FIGURE_ROWS:
        value, peer = ours.get(key), lite.get(key)
        ratio = f"{value / peer:.2f}x" if value is not None and peer else "-"
        lines.append(f"{label:<46}{table._cell(value):>11}{table._cell(peer):>11}{ratio:>8}")
    if "per_topic_kb" in ours and "per_topic_kb" in lite:
        met = ours["per_topic_kb"] <= lite["per_topic_kb"]
        lines.append(f"goal: memory per idle topic <= lite's: {'yes' if met else 'NO'}")
    return lines


# --- where our memory goes ---------------------------------------------------------------

def profile(base: pathlib.Path, topics: int, clients_count: int, idle_s: float,
            log: Callable[[str], None]) -> None:
    """Snapshots of the traced standalone before the topics and after they idled, compared."""
    traced = TracedStandalone(base / "traced")
    clients = Clients.start(f"persistent://public/default/traced-{int(time.time() * 1000)}",
                            topics, clients_count)
    try:
        before = traced.snapshot()
        rss_before = rss_mb(traced.process.pid)
        _open_all(clients, traced.process.service_url, "first", topics)
        time.sleep(idle_s)  # as in the measured run: the topics idle before the snapshot
        after = traced.snapshot()
        rss_after = rss_mb(traced.process.pid)
    finally:
        clients.stop()
        traced.process.stop()
    log(f"tracemalloc, {topics:,} topics: RSS {rss_before:.1f} -> {rss_after:.1f} MB (traced)")
    for line in allocation_report(before, after, topics):
        log(line)


def allocation_report(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot,
                      topics: int) -> list[str]:
    """Traced bytes per topic in total, per file, and the top sites (file:line)."""
    keep = [tracemalloc.Filter(False, tracemalloc.__file__),
            tracemalloc.Filter(False, "<frozen importlib._bootstrap*>")]
    before, after = before.filter_traces(keep), after.filter_traces(keep)
    total = sum(s.size_diff for s in after.compare_to(before, "filename"))
    lines = [f"traced Python memory per topic: {total / topics:,.0f} B"
             f" (RSS includes the allocator's free space and non-Python memory besides)"]
    lines.append("by file (B per topic):")
    for stat in after.compare_to(before, "filename")[:12]:
        lines.append(f"  {stat.size_diff / topics:>9,.0f}  {_short(stat.traceback[0].filename)}")
    lines.append(f"top {TOP_ALLOCATIONS} sites: B per topic, blocks per topic, file:line"
                 " (<- the nearest line of our code that led there, when the site is not ours)")
    for (site, caller), (size, count) in _attributed(before, after)[:TOP_ALLOCATIONS]:
        via = f"  <- {caller}" if caller and caller != site else ""
        lines.append(f"  {size / topics:>9,.0f} {count / topics:>7.1f}  {site}{via}")
    return lines


def _attributed(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot,
                ) -> list[tuple[tuple[str, str], tuple[int, int]]]:
    """Growth per (allocation site, nearest frame of our services' code), largest first: a
    deque made in asyncio's Event is charged to the line of ours that made the Event."""
    grown: dict[tuple[str, str], tuple[int, int]] = {}
    for stat in after.compare_to(before, "traceback"):
        frames = list(stat.traceback)  # oldest first: the allocation site is the last
        site = frames[-1]
        ours = next((f for f in reversed(frames) if "/services/" in f.filename), None)
        key = (f"{_short(site.filename)}:{site.lineno}",
               f"{_short(ours.filename)}:{ours.lineno}" if ours else "")
        size, count = grown.get(key, (0, 0))
        grown[key] = (size + stat.size_diff, count + stat.count_diff)
    return sorted(grown.items(), key=lambda item: -item[1][0])


def _short(filename: str) -> str:
    for marker in ("/services/", "/site-packages/", "/lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    return filename


@contextlib.contextmanager
def _nothing(phase: str, pid: int) -> Iterator[None]:
    yield


def _py_spy(out: pathlib.Path, log: Callable[[str], None],
            ) -> Callable[[str, int], contextlib.AbstractContextManager[None]]:
    """py-spy on the broker process `pid` during a phase, and a summary of where it went."""
    out.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def around(phase: str, pid: int) -> Iterator[None]:
        path = out / f"topic-scale-{phase}.txt"
        with broker_profile.recording(pid, path):
            yield
        log(f"--- py-spy, {phase} ({path})")
        for line in broker_profile.summary(path):
            log(line)

    return around


# --- entry points ------------------------------------------------------------------------

@contextlib.contextmanager
def _started(name: str, directory: pathlib.Path,
             log: Callable[[str], None]) -> Iterator[broker_servers.Broker | None]:
    broker: broker_servers.Broker | None = None
    try:
        if name == "lite":
            broker = broker_servers.LiteBroker(directory).start()
        else:
            broker = broker_servers.start_ours(directory, journal_sync=True)
        log(f"  {name}: started at {broker.service_url} (pid {broker.pid})")
    except (RuntimeError, TimeoutError, OSError, ImportError) as exc:
        log(f"  {name}: did not start: {exc}")
    try:
        yield broker
    finally:
        if broker is not None:
            broker.stop()


def run(argv: list[str]) -> None:
    if argv[:1] == ["worker"]:
        asyncio.run(_worker(argv[1], int(argv[2]), int(argv[3])))
        return
    parser = argparse.ArgumentParser(prog="python -m bench topic_scale")
    parser.add_argument("--topics", type=int, default=10_000,
                        help="topics, each with a producer and a consumer (default 10000)")
    parser.add_argument("--clients", type=int, default=4,
                        help="client processes sharing the topics (default 4)")
    parser.add_argument("--idle-seconds", type=float, default=10.0,
                        help="idle window before measuring RSS and idle CPU (default 10)")
    parser.add_argument("--targets", default="ours,lite", help="ours, lite or both (default)")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="profile our standalone's Python allocations per topic instead")
    parser.add_argument("--py-spy", metavar="DIR", default=None,
                        help="py-spy on our broker during the idle window and the reload;"
                             " collapsed stacks into DIR and a summary of each")
    parser.add_argument("--dir", default=None, help="where the temp data dirs go")
    args, _ = parser.parse_known_args(argv)

    def log(line: str) -> None:
        print(line, flush=True)

    base = pathlib.Path(tempfile.mkdtemp(prefix="bench-topic-scale-", dir=args.dir))
    started = time.monotonic()
    log(f"topic scale: {args.topics:,} topics, each with a producer and a consumer;"
        f" ours (fsync on) vs pulsar-lite {broker_servers.lite_version()}; load average"
        f" {table.load_average()}; data in {base}")
    try:
        if args.tracemalloc:
            profile(base, args.topics, args.clients, args.idle_seconds, log)
            return
        results: dict[str, Figures] = {}
        for name in args.targets.split(","):
            with _started(name, base / name, log) as broker:
                if broker is None:
                    continue
                around = _py_spy(pathlib.Path(args.py_spy), log) if args.py_spy and name == \
                    "ours" else _nothing
                try:
                    results[name] = measure(name, broker, args.topics, args.clients,
                                            args.idle_seconds, log, around)
                except (RuntimeError, TimeoutError, OSError) as exc:
                    log(f"  {name}: failed: {exc}")
        for line in render(results, args.topics):
            log(line)
        log(f"load average at the end {table.load_average()};"
            f" took {time.monotonic() - started:.0f} s")
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    run(sys.argv[1:])
