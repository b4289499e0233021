"""A function instance's cost: an identity function next to a bare consume-and-produce loop.

One `pulsar standalone` (journal fsync on, no functions worker). Two processors,
each its own process, read an input topic and write every message to an output
topic:

- function: `pulsar function-instance` running `def identity(input): return input`
  (ATLEAST_ONCE, the default: Shared subscription, input acknowledged once its
  output is persisted);
- bare loop: the official client alone (`python -m bench.functions bare ...`):
  subscribe (Shared) -> receive -> send_async the payload -> acknowledge in the
  send callback, with the same output producer settings as the instance's
  (batching, 10 ms delay, 1000 pending).

Each round, for each processor (alternating which goes first), on fresh topics:

- throughput: once the processor is subscribed and idle, --messages messages
  of 100 B are published as fast as the client batches them (1000 a batch, far
  faster than either processor); messages/s is that count over the time from
  the first send to the last output's arrival at a consumer of the output topic;
- latency: then, with the processor idle, --rate messages/s for --latency-seconds
  (unbatched sends), each payload carrying its send time; end-to-end latency is
  send -> receipt of its output by the consumer (one process, one clock).

Target (issue 13): identity function >= 0.5x the bare loop's messages/s.

    python -m bench functions [--messages 30000] [--rounds 2] [--rate 200] [--latency-seconds 4]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

MESSAGE_SIZE = 100
TARGET_RATIO = 0.5
SUBSCRIPTION = "bench"
IDENTITY = "def identity(input):\n    return input\n"
REPO = pathlib.Path(__file__).resolve().parents[1]


def _payload(prefix: str) -> bytes:
    return prefix.encode().ljust(MESSAGE_SIZE, b"x")


# --------------------------------------------------------------------------- the bare loop


def bare_loop(url: str, input_topic: str, output_topic: str, subscription: str) -> None:
    """subscribe -> receive -> send output -> ack (in the send callback), until SIGTERM."""
    import pulsar

    client = pulsar.Client(url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
    producer = client.create_producer(output_topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=10,
                                      max_pending_messages=1000, block_if_queue_full=True)
    consumer = client.subscribe(input_topic, subscription,
                                consumer_type=pulsar.ConsumerType.Shared)
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    print("ready", flush=True)
    while not stopping.is_set():
        try:
            message = consumer.receive(timeout_millis=200)
        except pulsar.Timeout:
            continue

        def acknowledge(result: Any, _id: Any, message: Any = message) -> None:
            if result == pulsar.Result.Ok:
                consumer.acknowledge(message)
            else:
                consumer.negative_acknowledge(message)

        producer.send_async(message.data(), acknowledge)
    producer.flush()
    client.close()


class BareProcess:
    def __init__(self, url: str, input_topic: str, output_topic: str, log: pathlib.Path) -> None:
        self.arguments = [sys.executable, "-m", "bench.functions", "bare", url, input_topic,
                          output_topic, SUBSCRIPTION]
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> BareProcess:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(self.arguments, stdout=subprocess.PIPE, stderr=log,
                                            cwd=REPO, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], 60)
        if not ready or self.process.stdout.readline().strip() != b"ready":
            raise RuntimeError(f"bare loop did not start (log {self.log})")
        return self

    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def stop(self) -> None:
        from pulsar_common import testing

        if self.process is not None:
            testing.stop_process(self.process, timeout_s=20)


# --------------------------------------------------------------------------- one round


def _cpu_seconds(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _round(kind: str, client: Any, service_url: str, work: pathlib.Path, messages: int,
           rate: float, latency_seconds: float) -> dict[str, float]:
    import pulsar
    from pulsar_functions import testing as functions_testing

    stamp = f"{kind}-{int(time.time() * 1000)}"
    source = f"persistent://public/default/bench-fn-in-{stamp}"
    sink = f"persistent://public/default/bench-fn-out-{stamp}"
    out = client.subscribe(sink, "check", receiver_queue_size=10_000,
                           initial_position=pulsar.InitialPosition.Earliest)
    work.mkdir(parents=True, exist_ok=True)
    processor: Any
    if kind == "function":
        code = work / "user_function.py"
        code.write_text(IDENTITY)
        processor = functions_testing.InstanceProcess(work, {
            "tenant": "public", "namespace": "default", "name": f"identity-{stamp}",
            "runtime": "PYTHON", "py": str(code), "className": "user_function.identity",
            "inputs": [source], "output": sink, "subscriptionName": SUBSCRIPTION,
            "processingGuarantee": "ATLEAST_ONCE", "brokerServiceUrl": service_url,
        }).start()
        pid = processor.process.pid
    else:
        processor = BareProcess(service_url, source, sink, work / "bare.log").start()
        pid = processor.pid()
    try:
        producer = client.create_producer(source, batching_enabled=True,
                                          batching_max_messages=1000,
                                          batching_max_publish_delay_ms=1,
                                          block_if_queue_full=True)
        body = _payload("t")
        started, cpu_started = time.perf_counter(), _cpu_seconds(pid)
        for _ in range(messages):
            producer.send_async(body, None)
        producer.flush()
        for _ in range(messages):
            last = out.receive(timeout_millis=30_000)
        elapsed = time.perf_counter() - started
        cpu = _cpu_seconds(pid) - cpu_started
        out.acknowledge_cumulative(last)
        producer.close()

        latencies = _latencies(client, source, out, rate, latency_seconds)
    finally:
        processor.stop()
        out.close()
    return {"msg_per_s": messages / elapsed, "cpu_us_per_msg": cpu / messages * 1e6,
            "p50_ms": _percentile(latencies, 0.50), "p99_ms": _percentile(latencies, 0.99)}


def _latencies(client: Any, source: str, out: Any, rate: float, seconds: float) -> list[float]:
    producer = client.create_producer(source, batching_enabled=False, block_if_queue_full=True)
    count = int(rate * seconds)
    latencies: list[float] = []

    def receive() -> None:
        while len(latencies) < count:
            message = out.receive(timeout_millis=30_000)
            received = time.perf_counter_ns()
            if message.data().startswith(b"l"):  # not a redelivered backlog message
                latencies.append((received - int(message.data()[1:21])) / 1e6)

    receiver = threading.Thread(target=receive)
    receiver.start()
    begin = time.perf_counter()
    for i in range(count):
        delay = begin + i / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        producer.send_async(_payload(f"l{time.perf_counter_ns():020d}"), None)
    producer.flush()
    receiver.join()
    producer.close()
    return latencies


# --------------------------------------------------------------------------- the benchmark


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench functions")
    parser.add_argument("--messages", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--latency-seconds", type=float, default=4.0)
    args, _ = parser.parse_known_args(argv)

    import pulsar
    from pulsar_broker import testing as broker_testing

    print(f"  load average at start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-functions-") as tmp:
        root = pathlib.Path(tmp)
        standalone = broker_testing.StandaloneProcess(
            root / "standalone" / "data", {"journalSyncData": "true"},
            log_path=root / "standalone.log")
        standalone.extra_arguments = ["--no-functions-worker"]
        standalone.start(90)
        client = pulsar.Client(standalone.service_url, operation_timeout_seconds=30,
                               logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Warn))
        results: dict[str, list[dict[str, float]]] = {"function": [], "bare": []}
        try:
            for number in range(args.rounds):
                order = ["function", "bare"] if number % 2 == 0 else ["bare", "function"]
                for kind in order:
                    figures = _round(kind, client, standalone.service_url,
                                     root / f"{kind}-{number}", args.messages, args.rate,
                                     args.latency_seconds)
                    results[kind].append(figures)
                    print(f"  round {number + 1} {kind:8}: {figures['msg_per_s']:,.0f} msg/s "
                          f"({figures['cpu_us_per_msg']:.0f} us CPU/msg in the processor), "
                          f"at {args.rate:.0f} msg/s p50 {figures['p50_ms']:.2f} ms "
                          f"p99 {figures['p99_ms']:.2f} ms", flush=True)
        finally:
            client.close()
            standalone.stop()
    print(f"  load average at end: {os.getloadavg()}")
    function, bare = results["function"], results["bare"]
    print(f"  {'figure':34} {'function':>10} {'bare loop':>10} {'ratio':>7}  (best of "
          f"{args.rounds}; target msg/s >= {TARGET_RATIO}x)")
    for key, title, best in (
        ("msg_per_s", "msg/s (100 B, backlog drained)", max),
        ("cpu_us_per_msg", "processor CPU us/msg", min),
        ("p50_ms", f"end-to-end p50 ms at {args.rate:.0f} msg/s", min),
        ("p99_ms", f"end-to-end p99 ms at {args.rate:.0f} msg/s", min),
    ):
        ours, theirs = best(r[key] for r in function), best(r[key] for r in bare)
        print(f"  {title:34} {ours:10,.2f} {theirs:10,.2f} {ours / theirs:6.2f}x")


if __name__ == "__main__":
    if sys.argv[1:2] == ["bare"]:
        bare_loop(*sys.argv[2:6])
    else:
        run(sys.argv[1:])
