"""The bookie's data-path transport: adds/s and p50/p99 over TCP, gRPC, and with no network at all.

Three ways to add entries to the same storage engine, same workload (many
adds in flight over 20 ledgers, one connection), fsync on and off:

    direct   the engine called in this process (the ceiling: no network, no second process)
    tcp      a `pulsar bookie` child process, our length-prefixed frames (pulsar_bookie.net)
    grpc     a child process serving the engine through grpc.aio, one unary call per add
             (bytes in, bytes out: no protobuf cost), the obvious gRPC design

    python -m bench bookie_transport [--seconds S] [--sizes 100,1024,65536] [--in-flight N]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

from pulsar_bookie import config as bookie_config
from pulsar_bookie import types
from pulsar_bookie.net import client as net_client
from pulsar_bookie.service import testing as bookie_testing
from pulsar_bookie.storage import engine
from pulsar_common import testing

KEY = b"bench"
SIZES = (100, 1024, 64 * 1024)
LEDGERS = 20
IN_FLIGHT = 1000
#: Fewer in flight for large entries keeps the write cache (and memory) in its rhythm.
IN_FLIGHT_LARGE = 128
GRPC_METHOD = "/pulsar.bookie.Bench/Add"
_ADD = struct.Struct(">qqq")

AddFn = Callable[[int, int, bytes], Awaitable[None]]


@dataclasses.dataclass(frozen=True)
class Result:
    transport: str
    size: int
    sync: bool
    adds: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def adds_per_s(self) -> float:
        return self.adds / self.seconds


def _conf(directory: pathlib.Path, sync: bool) -> bookie_config.BookieConfig:
    return bookie_config.BookieConfig(
        journalDirectory=str(directory / "journal"),
        ledgerDirectories=(str(directory / "ledgers"),),
        journalSyncData=sync,
    )


async def _drive(add: AddFn, size: int, seconds: float, in_flight: int) -> tuple[int, list[float]]:
    """Keep in_flight adds going for `seconds`; (adds, sorted latencies)."""
    payload = os.urandom(size)
    latencies: list[float] = []
    per_ledger = max(in_flight // LEDGERS, 1)
    deadline = time.perf_counter() + seconds

    async def writer(ledger: int, first: int) -> None:
        entry = first
        clock = time.perf_counter
        while True:
            started = clock()
            if started >= deadline:
                return
            await add(ledger, entry, payload)
            latencies.append(clock() - started)
            entry += per_ledger

    await asyncio.gather(*(writer(1 + w % LEDGERS, w // LEDGERS) for w in range(in_flight)))
    latencies.sort()
    return len(latencies), latencies


def _result(name: str, size: int, sync: bool, seconds: float,
            outcome: tuple[int, list[float]]) -> Result:
    adds, latencies = outcome
    return Result(
        name, size, sync, adds, seconds,
        latencies[len(latencies) // 2] * 1000 if latencies else float("nan"),
        latencies[int(len(latencies) * 0.99)] * 1000 if latencies else float("nan"),
    )


async def _direct(directory: pathlib.Path, size: int, sync: bool, seconds: float,
                  in_flight: int) -> Result:
    bookie = engine.LedgerStorageEngine(_conf(directory, sync))
    await bookie.start()

    async def add(ledger: int, entry: int, payload: bytes) -> None:
        await bookie.add_entry(
            types.LedgerId(ledger), types.EntryId(entry), types.EntryId(entry - 1), payload, KEY
        )

    try:
        started = time.perf_counter()
        outcome = await _drive(add, size, seconds, in_flight)
        return _result("direct", size, sync, time.perf_counter() - started, outcome)
    finally:
        await bookie.close()


async def _tcp(directory: pathlib.Path, size: int, sync: bool, seconds: float,
               in_flight: int) -> Result:
    process = bookie_testing.BookieProcess(
        directory, sync=sync, overrides={"httpServerEnabled": "true"}
    )
    await asyncio.to_thread(process.start)
    rpc = net_client.BookieClient(process.bookie_id)

    async def add(ledger: int, entry: int, payload: bytes) -> None:
        await rpc.add_entry(
            types.LedgerId(ledger), types.EntryId(entry), types.EntryId(entry - 1), payload, KEY
        )

    try:
        started = time.perf_counter()
        outcome = await _drive(add, size, seconds, in_flight)
        return _result("tcp", size, sync, time.perf_counter() - started, outcome)
    finally:
        await rpc.close()
        process.stop()


async def _grpc(directory: pathlib.Path, size: int, sync: bool, seconds: float,
                in_flight: int) -> Result:
    import grpc

    port = testing.free_port()
    server = subprocess.Popen(  # noqa: ASYNC220 - started before any async work of the run
        [sys.executable, "-m", "bench.bookie_transport", "--serve-grpc", str(port),
         str(directory), "1" if sync else "0"],
    )
    try:
        testing.wait_until(lambda: testing.port_open(port), 60, "grpc bench server", server)
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(GRPC_METHOD)

            async def add(ledger: int, entry: int, payload: bytes) -> None:
                await call(_ADD.pack(ledger, entry, entry - 1) + payload, timeout=30)

            started = time.perf_counter()
            outcome = await _drive(add, size, seconds, in_flight)
            return _result("grpc", size, sync, time.perf_counter() - started, outcome)
    finally:
        testing.stop_process(server)


async def _serve_grpc(port: int, directory: pathlib.Path, sync: bool) -> None:
    """The gRPC side: engine + grpc.aio server, until SIGTERM."""
    import signal

    import grpc

    bookie = engine.LedgerStorageEngine(_conf(directory, sync))
    await bookie.start()

    async def add(request: bytes, context: object) -> bytes:
        ledger, entry, lac = _ADD.unpack_from(request)
        await bookie.add_entry(
            types.LedgerId(ledger), types.EntryId(entry), types.EntryId(lac),
            request[_ADD.size:], KEY,
        )
        return b""

    handler = grpc.method_handlers_generic_handler(
        "pulsar.bookie.Bench", {"Add": grpc.unary_unary_rpc_method_handler(add)}
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(1)
    await bookie.close()


def _run_async(coroutine: Awaitable[Result], use_uvloop: bool) -> Result:
    async def main() -> Result:
        return await coroutine

    if use_uvloop:
        import uvloop

        return uvloop.run(main())
    return asyncio.run(main())


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench bookie_transport")
    parser.add_argument("--dir", default=".", help="where the bookies keep their data")
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per measurement")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--in-flight", type=int, default=IN_FLIGHT)
    parser.add_argument("--transports", default="direct,tcp,grpc")
    args = parser.parse_args(argv)
    runners = {"direct": _direct, "tcp": _tcp, "grpc": _grpc}
    base = pathlib.Path(tempfile.mkdtemp(prefix="bench-transport-", dir=args.dir))
    print(f"one connection, {LEDGERS} ledgers; clients use uvloop except grpc (grpc.aio)")
    print(f"{'transport':>9} {'entry':>6} {'fsync':>5} {'in flight':>9} {'adds/s':>9}"
          f" {'p50 ms':>7} {'p99 ms':>7} {'vs direct':>9}")
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            in_flight = args.in_flight if size < 16 * 1024 else min(args.in_flight,
                                                                     IN_FLIGHT_LARGE)
            for sync in (True, False):
                direct_rate = None
                for name in args.transports.split(","):
                    directory = base / f"{name}-{size}-{sync}"
                    result = _run_async(
                        runners[name](directory, size, sync, args.seconds, in_flight),
                        use_uvloop=name != "grpc",
                    )
                    if name == "direct":
                        direct_rate = result.adds_per_s
                    ratio = f"{result.adds_per_s / direct_rate:.0%}" if direct_rate else "-"
                    print(f"{name:>9} {size:>6} {'on' if sync else 'off':>5} {in_flight:>9}"
                          f" {result.adds_per_s:>9.0f} {result.p50_ms:>7.2f}"
                          f" {result.p99_ms:>7.2f} {ratio:>9}", flush=True)
                    shutil.rmtree(directory, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--serve-grpc":
        asyncio.run(_serve_grpc(int(sys.argv[2]), pathlib.Path(sys.argv[3]), sys.argv[4] == "1"))
        return
    run(sys.argv[1:])


if __name__ == "__main__":
    main()
