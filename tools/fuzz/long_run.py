"""`python -m tools.fuzz` (`make fuzz`): a long fuzz of a standalone broker and a proxy.

Starts `pulsar standalone` and `pulsar proxy` in front of it, opens two witnesses (an
official client's producer and consumer, one straight to the broker, one through the
proxy), then sends attacks (tools.fuzz.frames) from several concurrent connections
until the frame budget or the time budget is spent: half to the broker, a quarter to
the proxy itself, a quarter relayed by the proxy to the broker. Every few seconds both
witnesses must get a message round and both processes' RSS is sampled. The report says
how many frames were sent, how fast, the peak RSS of each process against its limit,
and whether both processes were still up and the witnesses still on their first
connections at the end.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import logging
import pathlib
import random
import tempfile
import time
from typing import Any

from pulsar_broker import testing as broker_testing

from tools.fuzz import driver, frames

#: Default RSS limit of each process during the run (the broker's own memory limits,
#: caches and in-flight windows, sit far below it).
RSS_LIMIT_MIB = 1024


@dataclasses.dataclass
class FuzzOptions:
    frames: int
    seed: int
    connections: int = 8
    max_seconds: float = 0.0
    check_interval_s: float = 5.0
    rss_limit_mib: int = RSS_LIMIT_MIB
    report_dir: pathlib.Path = pathlib.Path("build/fuzz-report")


@dataclasses.dataclass
class Tally:
    frames: int = 0
    attacks: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    checks: int = 0
    failures: list[str] = dataclasses.field(default_factory=list)
    peak_rss_mib: dict[str, float] = dataclasses.field(default_factory=dict)


def rss_mib(pid: int) -> tuple[float, float]:
    """(current, peak) resident memory of pid in MiB."""
    fields = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


def run(options: FuzzOptions) -> dict[str, Any]:
    # Writes to connections the target has just reset are expected here, by the thousand.
    logging.getLogger("asyncio").setLevel(logging.ERROR)
    print(f"fuzz seed {options.seed}: up to {options.frames} frames"
          + (f" or {options.max_seconds:.0f}s" if options.max_seconds else ""), flush=True)
    with tempfile.TemporaryDirectory(prefix="fuzz-") as scratch:
        root = pathlib.Path(scratch)
        broker = broker_testing.StandaloneProcess(root / "standalone",
                                                  {"journalSyncData": "false"})
        broker.start()
        proxy = broker_testing.ProxyProcess(root / "proxy", {
            "brokerServiceURL": broker.service_url, "brokerWebServiceURL": broker.web_url})
        try:
            proxy.start()
            result = asyncio.run(_attack(options, broker, proxy))
            result["broker_log_tracebacks"] = broker.log_text().count("Traceback")
            result["proxy_log_tracebacks"] = proxy.log_text().count("Traceback")
        finally:
            proxy.stop()
            broker.stop()
    options.report_dir.mkdir(parents=True, exist_ok=True)
    (options.report_dir / "fuzz-report.json").write_text(json.dumps(result, indent=2) + "\n")
    (options.report_dir / "fuzz-report.md").write_text(markdown(result))
    print(summary(result), flush=True)
    return result


async def _attack(options: FuzzOptions, broker: broker_testing.StandaloneProcess,
                  proxy: broker_testing.ProxyProcess) -> dict[str, Any]:
    witnesses = {
        "broker": driver.Witness(broker.service_url, broker.web_url),
        "proxy": driver.Witness(proxy.service_url, broker.web_url),
    }
    pids = {"broker": broker.pid, "proxy": proxy.pid}
    tally = Tally()
    started = time.monotonic()
    stop = asyncio.Event()
    broker_address = broker.service_url.removeprefix("pulsar://")

    def out_of_budget() -> bool:
        return (tally.frames >= options.frames or bool(tally.failures)
                or (options.max_seconds > 0 and time.monotonic() - started > options.max_seconds))

    async def worker(index: int) -> None:
        rng = random.Random(f"{options.seed}:{index}")
        while not stop.is_set():
            attack = frames.attack(rng)
            where = rng.random()
            try:
                if where < 0.5:
                    outcome = await driver.deliver("127.0.0.1", broker.broker_port, attack,
                                                   quiet_s=0.005)
                elif where < 0.75:
                    outcome = await driver.deliver("127.0.0.1", proxy.broker_port, attack,
                                                   quiet_s=0.005)
                else:
                    outcome = await driver.deliver("127.0.0.1", proxy.broker_port, attack,
                                                   proxy_to_broker_url=broker_address,
                                                   quiet_s=0.005)
            except OSError as exc:
                outcome = f"connect failed: {type(exc).__name__}"
            tally.frames += attack.frames
            tally.attacks[attack.kind] += 1
            tally.outcomes[outcome] += 1
            if out_of_budget():
                stop.set()

    async def checker() -> None:
        last_report = time.monotonic()
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), options.check_interval_s)
            except TimeoutError:
                pass
            await check(witnesses, pids, tally, options.rss_limit_mib)
            if out_of_budget():
                stop.set()
            if time.monotonic() - last_report > 60:
                last_report = time.monotonic()
                print(f"{tally.frames} frames in {time.monotonic() - started:.0f}s, "
                      f"peak RSS {tally.peak_rss_mib}", flush=True)

    await asyncio.gather(checker(), *(worker(i) for i in range(options.connections)))
    elapsed = time.monotonic() - started
    await check(witnesses, pids, tally, options.rss_limit_mib)
    kept = {name: await asyncio.to_thread(w.connection_kept) for name, w in witnesses.items()}
    for w in witnesses.values():
        await asyncio.to_thread(w.close)
    return {
        "seed": options.seed,
        "frames": tally.frames,
        "frames_budget": options.frames,
        "seconds": round(elapsed, 1),
        "frames_per_second": round(tally.frames / elapsed, 1) if elapsed else 0.0,
        "attacks_by_kind": dict(sorted(tally.attacks.items())),
        "connections_by_outcome": dict(sorted(tally.outcomes.items())),
        "witness_checks": tally.checks,
        "failures": tally.failures,
        "witness_connections_kept": kept,
        "peak_rss_mib": tally.peak_rss_mib,
        "rss_limit_mib": options.rss_limit_mib,
        "broker_up": broker.process is not None and broker.process.poll() is None,
        "proxy_up": proxy.process is not None and proxy.process.poll() is None,
    }


async def check(witnesses: dict[str, driver.Witness], pids: dict[str, int], tally: Tally,
                rss_limit_mib: int) -> None:
    for name, witness in witnesses.items():
        try:
            await asyncio.to_thread(witness.round_trip)
        except Exception as exc:  # recorded: the run stops at its first failure
            tally.failures.append(f"witness through the {name}: {exc!r}")
    for name, pid in pids.items():
        try:
            _, peak = rss_mib(pid)
        except OSError:
            tally.failures.append(f"the {name} process is gone")
            continue
        tally.peak_rss_mib[name] = round(max(peak, tally.peak_rss_mib.get(name, 0.0)), 1)
        if peak > rss_limit_mib:
            tally.failures.append(f"the {name}'s peak RSS {peak:.0f} MiB is over "
                                  f"{rss_limit_mib} MiB")
    tally.checks += 1


def passed(result: dict[str, Any]) -> bool:
    return (not result["failures"] and result["broker_up"] and result["proxy_up"]
            and all(result["witness_connections_kept"].values()))


def summary(result: dict[str, Any]) -> str:
    return (f"seed {result['seed']}: {result['frames']} frames in {result['seconds']}s "
            f"({result['frames_per_second']}/s), peak RSS {result['peak_rss_mib']} MiB "
            f"(limit {result['rss_limit_mib']}), broker up {result['broker_up']}, "
            f"proxy up {result['proxy_up']}, witnesses kept their connections "
            f"{result['witness_connections_kept']}, failures {len(result['failures'])}")


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# Fuzz run, seed {result['seed']}",
        "",
        f"{result['frames']} frames (budget {result['frames_budget']}) in {result['seconds']} s, "
        f"{result['frames_per_second']} frames/s.",
        "",
        "| check | result |",
        "|---|---|",
        f"| broker up at the end | {result['broker_up']} |",
        f"| proxy up at the end | {result['proxy_up']} |",
        f"| witness round trips (each through broker and proxy) | {result['witness_checks']} |",
        f"| witnesses kept their first connection | {result['witness_connections_kept']} |",
        f"| failures | {len(result['failures'])} |",
        *(f"| peak RSS, {name} | {mib} MiB (limit {result['rss_limit_mib']} MiB) |"
          for name, mib in result["peak_rss_mib"].items()),
        f"| tracebacks in the broker's / proxy's log | {result['broker_log_tracebacks']} / "
        f"{result['proxy_log_tracebacks']} |",
        "",
        "| attack kind | connections |",
        "|---|---|",
        *(f"| {kind} | {n} |" for kind, n in result["attacks_by_kind"].items()),
        "",
        "| connection outcome | connections |",
        "|---|---|",
        *(f"| {outcome} | {n} |" for outcome, n in result["connections_by_outcome"].items()),
        "",
        *(f"- {failure}" for failure in result["failures"]),
    ]
    return "\n".join(lines) + "\n"
