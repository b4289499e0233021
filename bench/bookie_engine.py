"""Bookie storage engine throughput and latency, next to the disk's own fdatasync bandwidth.

For 100 B, 1 KiB and 64 KiB entries, with journalSyncData on and off, many
adds in flight spread over many ledgers: adds/s, MB/s, p50/p99 add latency.
The same run measures the disk in the same directory: sequential 1 MiB writes
with O_DIRECT, each followed by fdatasync, which is the best a journal on this
disk can do.

    python -m bench bookie_engine [--dir DIR] [--seconds S] [--no-uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import errno
import mmap
import os
import pathlib
import shutil
import tempfile
import time

from pulsar_bookie import config as bookie_config
from pulsar_bookie import types
from pulsar_bookie.storage import engine
from pulsar_common import config

KEY = b"bench"
SIZES = (100, 1024, 64 * 1024)
#: Adds in flight per entry size (bounded so that 64 KiB runs stay within the write cache's rhythm).
IN_FLIGHT = {100: 2000, 1024: 2000, 64 * 1024: 256}
LEDGERS = 100


@dataclasses.dataclass(frozen=True)
class Result:
    size: int
    sync: bool
    adds: int
    seconds: float
    p50_ms: float
    p99_ms: float
    fsyncs: int
    cpu_s: float

    @property
    def adds_per_s(self) -> float:
        return self.adds / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.adds * self.size / self.seconds / 1e6


def disk_fdatasync_bandwidth(
    directory: pathlib.Path, seconds: float, block: int = 1024 * 1024, *, direct: bool = True
) -> float:
    """MB/s of sequential `block`-sized writes, each followed by fdatasync.

    `direct`: written with O_DIRECT from a page-aligned buffer, as the journal writes
    (journalDirectWrites), so that the figure is the disk's and not the page cache's (on
    a VM the copy into new page cache can cost more than the disk; see bench/README.md).
    A filesystem that refuses O_DIRECT is measured through the page cache instead."""
    if direct:
        try:
            return _sequential_fdatasync(directory, seconds, block, os.O_DIRECT)
        except OSError as exc:
            if exc.errno != errno.EINVAL:
                raise
    return _sequential_fdatasync(directory, seconds, block, 0)


def _sequential_fdatasync(directory: pathlib.Path, seconds: float, block: int, flags: int) -> float:
    path = directory / "disk-baseline"
    data = mmap.mmap(-1, block)  # page aligned, as O_DIRECT needs
    data.write(os.urandom(block))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | flags, 0o644)
        try:
            written = 0
            started = time.perf_counter()
            while time.perf_counter() - started < seconds:
                os.pwrite(fd, data, written)
                os.fdatasync(fd)
                written += block
            return written / (time.perf_counter() - started) / 1e6
        finally:
            os.close(fd)
    finally:
        data.close()
        path.unlink(missing_ok=True)


async def _run_one(
    directory: pathlib.Path, size: int, sync: bool, seconds: float, overrides: dict[str, str]
) -> Result:
    conf = dataclasses.replace(
        config.load(bookie_config.BookieConfig, overrides=overrides),
        journalDirectory=str(directory / "journal"),
        ledgerDirectories=(str(directory / "ledgers"),),
        journalSyncData=sync,
    )
    bookie = engine.LedgerStorageEngine(conf)
    await bookie.start()
    payload = os.urandom(size)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    in_flight = IN_FLIGHT[size]
    per_ledger = max(in_flight // LEDGERS, 1)

    async def writer(ledger: int, first: int) -> None:
        entry = first
        add = bookie.add_entry
        clock = time.perf_counter
        while True:
            started = clock()
            if started >= deadline:
                return
            await add(
                types.LedgerId(ledger), types.EntryId(entry), types.EntryId(entry - 1), payload, KEY
            )
            latencies.append(clock() - started)
            entry += per_ledger

    fsyncs_before = bookie.stats().journal_fsyncs
    cpu_before = time.process_time()
    started = time.perf_counter()
    await asyncio.gather(*(writer(1 + w % LEDGERS, w // LEDGERS) for w in range(in_flight)))
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_before
    fsyncs = bookie.stats().journal_fsyncs - fsyncs_before
    await bookie.close()
    latencies.sort()
    return Result(
        size,
        sync,
        len(latencies),
        elapsed,
        latencies[len(latencies) // 2] * 1000,
        latencies[int(len(latencies) * 0.99)] * 1000,
        fsyncs,
        cpu,
    )


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench bookie_engine")
    parser.add_argument(
        "--dir", default=".", help="directory on the disk to measure (a temp dir is made in it)"
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per measurement")
    parser.add_argument("--no-uvloop", action="store_true")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument(
        "--conf", action="append", default=[], help="bookie setting key=value (repeatable)"
    )
    args = parser.parse_args(argv)
    base = pathlib.Path(tempfile.mkdtemp(prefix="bench-bookie-", dir=args.dir))
    try:
        print(
            f"in {base}; 'disk MB/s' = sequential 1 MiB O_DIRECT writes + fdatasync, measured right before each row"
        )
        print(
            f"{'entry':>7} {'fsync':>5} {'adds/s':>9} {'MB/s':>7} {'p50 ms':>7} {'p99 ms':>7}"
            f" {'adds/fsync':>10} {'cpu us/add':>10} {'disk MB/s':>9} {'of disk':>7}"
        )
        for size in (int(s) for s in args.sizes.split(",")):
            for sync in (True, False):
                disk = disk_fdatasync_bandwidth(base, min(args.seconds, 2.0))
                directory = base / f"{size}-{sync}"
                result = _run_loop(
                    directory,
                    size,
                    sync,
                    args.seconds,
                    not args.no_uvloop,
                    config.parse_overrides(args.conf),
                )
                per_fsync = result.adds / result.fsyncs if result.fsyncs else float("inf")
                print(
                    f"{size:>7} {'on' if sync else 'off':>5} {result.adds_per_s:>9.0f}"
                    f" {result.mb_per_s:>7.1f} {result.p50_ms:>7.2f} {result.p99_ms:>7.2f}"
                    f" {per_fsync:>10.1f} {result.cpu_s / result.adds * 1e6:>10.1f} {disk:>9.1f} {result.mb_per_s / disk:>7.0%}",
                    flush=True,
                )
                shutil.rmtree(directory, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_loop(
    directory: pathlib.Path,
    size: int,
    sync: bool,
    seconds: float,
    use_uvloop: bool,
    overrides: dict[str, str],
) -> Result:
    if use_uvloop:
        import uvloop

        return uvloop.run(_run_one(directory, size, sync, seconds, overrides))
    return asyncio.run(_run_one(directory, size, sync, seconds, overrides))
