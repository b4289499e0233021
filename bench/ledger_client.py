"""The replicated ledger client as a broker on a cluster drives it: adds and reads per second,
and the client's CPU per add and per entry read.

`pulsar bookie` processes (journal sync off, so the bookies answer at once) on real etcd;
in a child process a ReplicatedLedgerClient writes 100 B entries with 1,000 in flight,
handing each add to the ledger as the managed ledger's add pipeline does (the handle's
`append_future` where it has one, else a task per add awaiting `append`), on uvloop as
the broker runs; then the closed ledger is read back 100 entries at a time, one
read after the other, as a dispatcher reads a backlog the broker's cache does not
hold. Quorums E,WQ,AQ = 3,2,2 (a cluster's usual) and 1,1,1
(`standaloneBookieProcess`). The figures to compare are the CPU times per add and per
entry read: the client process's, and the bookie processes' together (from /proc; with
WQ=2 two bookies handle each add). With `--trees` the bookies are this tree's: to compare
bookie code, run the whole benchmark with PYTHONPATH at each tree instead.

With `--trees name=path,...` each round runs each tree's client code in turn (PYTHONPATH
at that tree's packages; the bookies are this tree's), so two versions of the writer
can be compared on a busy machine:

    python -m bench ledger_client [--adds 50000] [--rounds 3] [--trees before=/tmp/wt,after=.]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import random
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any

from bench import broker_core, broker_servers

QUORUMS = ((3, 2, 2), (1, 1, 1))
IN_FLIGHT = 1000
PAYLOAD_BYTES = 100
#: Entries per read, one read after the other: a dispatcher's reads (dispatcherMaxReadBatchSize).
READ_BATCH = 100


async def _drive(handle: Any, count: int) -> None:
    """`count` adds with IN_FLIGHT in flight, each handed over as the add pipeline does."""
    loop = asyncio.get_running_loop()
    finished = loop.create_future()
    payload = random.randbytes(PAYLOAD_BYTES)
    append_future = getattr(handle, "append_future", None)
    tasks: set[asyncio.Task[Any]] = set()
    sent = acked = 0

    async def append() -> None:
        await handle.append(payload)

    def on_done(added: asyncio.Future[Any]) -> None:
        nonlocal acked
        if added.exception() is not None and not finished.done():
            finished.set_exception(added.exception())  # type: ignore[arg-type]
        acked += 1
        if sent < count:
            send()
        elif acked == count and not finished.done():
            finished.set_result(None)

    def send() -> None:
        nonlocal sent
        sent += 1
        if append_future is not None:
            added = append_future(payload)
        else:
            added = loop.create_task(append())
            tasks.add(added)
            added.add_done_callback(tasks.discard)
        added.add_done_callback(on_done)

    for _ in range(min(IN_FLIGHT, count)):
        send()
    await finished


def _bookies_cpu_s(pids: list[int]) -> float:
    return sum(broker_servers.cpu_s(pid) for pid in pids)


async def _measure(metadata_url: str, adds: int, bookie_pids: list[int]) -> dict[str, float]:
    from pulsar_bookie.client.replicated import client as replicated
    from pulsar_bookie.net import client as bookie_net
    from pulsar_common.metadata import factory

    from bench.autorecovery import Registered

    store = await factory.create_store(metadata_url)
    pool = bookie_net.BookieClientPool()
    ledgers = replicated.ReplicatedLedgerClient(store, pool, Registered(store))
    figures: dict[str, float] = {}
    try:
        for quorum in QUORUMS:
            handle = await ledgers.create_ledger(*quorum)
            await _drive(handle, IN_FLIGHT)  # connections open, code warm
            started, cpu = time.perf_counter(), time.process_time()
            bookies_cpu = _bookies_cpu_s(bookie_pids)
            await _drive(handle, adds)
            name = ",".join(map(str, quorum))
            figures[f"{name} adds/s"] = adds / (time.perf_counter() - started)
            figures[f"{name} CPU us/add"] = (time.process_time() - cpu) * 1e6 / adds
            figures[f"{name} bookies' CPU us/add"] = (
                _bookies_cpu_s(bookie_pids) - bookies_cpu) * 1e6 / adds
            await handle.close()
            reader = await ledgers.open_ledger(handle.ledger_id, recovery=False)
            last = reader.last_add_confirmed
            started, cpu = time.perf_counter(), time.process_time()
            bookies_cpu = _bookies_cpu_s(bookie_pids)
            read = 0
            for first in range(0, last + 1, READ_BATCH):
                read += len(await reader.read(first, min(first + READ_BATCH, last + 1) - 1))
            figures[f"{name} reads/s"] = read / (time.perf_counter() - started)
            figures[f"{name} CPU us/read"] = (time.process_time() - cpu) * 1e6 / read
            figures[f"{name} bookies' CPU us/read"] = (
                _bookies_cpu_s(bookie_pids) - bookies_cpu) * 1e6 / read
            await reader.close()
    finally:
        await pool.close()
        await store.close()
    return figures


def _child(metadata_url: str, adds: int, bookie_pids: list[int]) -> None:
    import uvloop

    print(json.dumps(uvloop.run(_measure(metadata_url, adds, bookie_pids))), flush=True)


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench ledger_client")
    parser.add_argument("--adds", type=int, default=50_000, help="adds per quorum and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; best and median shown")
    broker_core.add_trees_option(parser)
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    parser.add_argument("--bookie-pids", default="", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        _child(options.child, options.adds, [int(p) for p in options.bookie_pids.split(",")])
        return
    from pulsar_bookie.service import testing
    from pulsar_common.etcd_server import EtcdServer

    trees = broker_core.trees_of(options.trees)
    root = pathlib.Path(tempfile.mkdtemp(prefix="bench-ledger-writer-"))
    etcd = EtcdServer(root / "etcd")
    bookies: list[testing.BookieProcess] = []
    try:
        etcd.start()
        for i in range(max(q[0] for q in QUORUMS)):
            bookies.append(testing.BookieProcess(root / f"bookie-{i}", metadata_url=etcd.url,
                                                 sync=False))
            bookies[-1].launch()
        for bookie in bookies:
            bookie.wait_ready()
        every: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
        for round_number in range(1, options.rounds + 1):
            for name, path in trees.items():
                figures = broker_core.run_in_tree(
                    pathlib.Path(path), "bench.ledger_client",
                    ["--child", etcd.url, "--adds", str(options.adds), "--bookie-pids",
                     ",".join(str(b.pid) for b in bookies)])
                print(f"  round {round_number} {name}: "
                      + ", ".join(f"{k} {v:,.1f}" for k, v in figures.items()), flush=True)
                for key, value in figures.items():
                    every[name].setdefault(key, []).append(value)
        _print(trees, every)
    finally:
        for bookie in bookies:
            bookie.kill()
        etcd.stop()
        shutil.rmtree(root, ignore_errors=True)


def _print(trees: dict[str, str], every: dict[str, dict[str, list[float]]]) -> None:
    names = list(trees)
    print(f"{'E,WQ,AQ figure (best / median round)':40}" + "".join(f"{n:>24}" for n in names))
    for key in every[names[0]]:
        higher_is_better = key.endswith("/s")
        cells = []
        for name in names:
            values = every[name][key]
            best = max(values) if higher_is_better else min(values)
            cells.append(f"{best:>11,.1f} / {statistics.median(values):>10,.1f}")
        print(f"  {key:38}" + "".join(f"{c:>24}" for c in cells))


if __name__ == "__main__":
    run(sys.argv[1:])
