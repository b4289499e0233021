"""The broker's storage and delivery core in one process: managed-ledger adds, then dispatch
and acknowledgement through Shared and Exclusive subscriptions, over the in-process bookie
engine (journal sync off) and RocksDB metadata, as the managed-ledger tests run them.

No sockets and no client: it times the code the managed ledger and the dispatchers run, so
two versions of that code can be compared on a busy machine. With `--trees
name=path,name=path` every round runs each tree's code in a child process (PYTHONPATH set
to that tree's package dirs), alternating; the best and the median round per tree are
shown (CPU time per message is the steadier figure on a shared machine):

    python -m bench.broker_core --trees before=/tmp/wt-base,after=/work/main --rounds 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from typing import Any

PACKAGE_DIRS = ("services/common", "services/bookie", "services/broker", "services/proxy",
                "services/function-worker", "operator", "spark")
FIGURES = (
    ("adds/s", "add_per_s", True),
    ("Shared dispatch+ack msg/s", "shared_per_s", True),
    ("Exclusive dispatch+ack msg/s", "exclusive_per_s", True),
    # CPU time of the process (all its threads) per message: what the code costs, far less
    # sensitive than wall time to other work on a shared machine.
    ("add CPU us/entry", "add_cpu_us", False),
    ("Shared CPU us/msg", "shared_cpu_us", False),
    ("Exclusive CPU us/msg", "exclusive_cpu_us", False),
)
#: How long one child may take before the round is abandoned.
CHILD_TIMEOUT_S = 600


class _Connection:
    """Counts the MESSAGE frames a consumer would send (both versions' signatures)."""

    remote_address = "bench"
    writable = True

    def __init__(self) -> None:
        self.sent: list[Any] = []

    def send_message(self, consumer_id: int, position: Any, *args: Any, **kwargs: Any) -> None:
        self.sent.append(position)

    def send_active_consumer_change(self, consumer_id: int, is_active: bool) -> None:
        pass

    def send_close_consumer(self, consumer_id: int) -> None:
        pass


def _entry(sequence_id: int) -> bytes:
    from pulsar_common.wire import pulsar_api_pb2 as pb

    raw: bytes = pb.MessageMetadata(producer_name="bench", sequence_id=sequence_id,
                                    publish_time=1).SerializeToString()
    return struct.pack(">I", len(raw)) + raw + b"x" * 100


async def _drain(subscription: Any, connections: list[_Connection], count: int,
                 cumulative: bool) -> None:
    """Until every entry went out and was acknowledged (in chunks, as clients group acks)."""
    from pulsar_broker.subscriptions.consumer import Consumer

    consumers = [c for c in subscription.consumers if isinstance(c, Consumer)]
    acked = 0
    while acked < count:
        for consumer, cnx in zip(consumers, connections, strict=True):
            if len(cnx.sent) >= 100 or (cnx.sent and acked + len(cnx.sent) >= count):
                chunk, cnx.sent[:] = list(cnx.sent), []
                if cumulative:
                    await subscription.acknowledge(consumer, [max(chunk)], True)
                else:
                    await subscription.acknowledge(consumer, chunk, False)
                acked += len(chunk)
        await asyncio.sleep(0)


async def _measure(root: pathlib.Path, entries: int) -> dict[str, float]:
    from pulsar_broker import testing as broker_testing
    from pulsar_broker.managed_ledger import api as ml
    from pulsar_broker.subscriptions.consumer import Consumer, SubType
    from pulsar_broker.subscriptions.subscription import Subscription
    from pulsar_common import clock

    stack = await broker_testing.start_managed_ledger_stack(
        root, clock.ManualClock(), max_entries_per_ledger=5000, cursor_position_flush_seconds=1.0)
    try:
        ledger = await stack.factory.open("public/default/persistent/bench-core")
        shared_cursor = await ledger.open_cursor("shared", ml.InitialPosition.EARLIEST)
        exclusive_cursor = await ledger.open_cursor("exclusive", ml.InitialPosition.EARLIEST)
        data = [_entry(i) for i in range(entries)]
        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*[ledger.add_entry_future(d) for d in data])
        add_s = time.perf_counter() - started
        result = {"add_per_s": entries / add_s,
                  "add_cpu_us": (time.process_time() - cpu) * 1e6 / entries}
        for key, cursor, sub_type, count in (
            ("shared_per_s", shared_cursor, SubType.SHARED, 2),
            ("exclusive_per_s", exclusive_cursor, SubType.EXCLUSIVE, 1),
        ):
            subscription = Subscription("bench", cursor.name, cursor, sub_type, -1, 100)
            connections = [_Connection() for _ in range(count)]
            started, cpu = time.perf_counter(), time.process_time()
            for i, cnx in enumerate(connections):
                consumer = Consumer(cnx, i, f"c{i}", sub_type, 0, -1, 0)
                subscription.add_consumer(consumer)
                consumer.flow(entries)
            subscription.new_entries()
            await _drain(subscription, connections, entries, sub_type is SubType.EXCLUSIVE)
            result[key] = entries / (time.perf_counter() - started)
            result[key.replace("per_s", "cpu_us")] = (time.process_time() - cpu) * 1e6 / entries
            await subscription.close()
        return result
    finally:
        await stack.stop()


def _child(entries: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-core-") as directory:
        figures = asyncio.run(_measure(pathlib.Path(directory), entries))
    print(json.dumps(figures), flush=True)


def run_in_tree(tree: pathlib.Path, module: str, argv: list[str]) -> dict[str, float]:
    """Run `python -m module argv` with PYTHONPATH at tree's packages (and this bench);
    the figures of the JSON object on its last line of output."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tree / d) for d in PACKAGE_DIRS] + [str(pathlib.Path(__file__).parents[1])])
    reply = subprocess.run([sys.executable, "-m", module, *argv], env=env,
                           capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    if reply.returncode:
        sys.stderr.write(reply.stderr)
        reply.check_returncode()
    figures: dict[str, float] = json.loads(reply.stdout.strip().splitlines()[-1])
    return figures


def add_trees_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trees", default="",
                        help="name=path,... : compare these source trees (default: this one)")


def trees_of(option: str) -> dict[str, str]:
    """The --trees option's trees by name; this tree alone when it is empty."""
    here = pathlib.Path(__file__).resolve().parents[1]
    return dict(item.split("=", 1) for item in option.split(",") if item) or {"this": str(here)}


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench broker_core")
    parser.add_argument("--entries", type=int, default=20_000, help="entries per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the best is shown")
    add_trees_option(parser)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        _child(options.entries)
        return
    trees = trees_of(options.trees)
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    every: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    for round_number in range(1, options.rounds + 1):
        for name, path in trees.items():
            figures = run_in_tree(pathlib.Path(path), "bench.broker_core",
                                  ["--child", "--entries", str(options.entries)])
            print(f"  round {round_number} {name}: "
                  + ", ".join(f"{label} {figures[key]:,.1f}" for label, key, _ in FIGURES),
                  flush=True)
            for _, key, higher_is_better in FIGURES:
                every[name].setdefault(key, []).append(figures[key])
                old = best[name].get(key)
                if old is None or (figures[key] > old) == higher_is_better:
                    best[name][key] = figures[key]
    medians = {n: {k: statistics.median(v) for k, v in every[n].items()} for n in trees}
    for title, table in (("best round", best), ("median round", medians)):
        _print_table(title, list(trees), table)


def _print_table(title: str, names: list[str], table: dict[str, dict[str, float]]) -> None:
    print(f"{title:32}" + "".join(f"{n:>14}" for n in names)
          + (f"{names[-1] + '/' + names[0]:>16}" if len(names) > 1 else ""))
    for label, key, _ in FIGURES:
        row = f"  {label:30}" + "".join(f"{table[n][key]:>14,.1f}" for n in names)
        if len(names) > 1:
            row += f"{table[names[-1]][key] / table[names[0]][key]:>15.2f}x"
        print(row)


if __name__ == "__main__":
    run(sys.argv[1:])
