"""The proxy's cost: the same workloads straight to a broker and through `pulsar proxy`.

One `pulsar standalone` (journal fsync on) with a proxy in front of it; each
round runs batched produce and then a catch-up consume of that backlog (after
a broker restart, so it is read from storage) once direct and once through
the proxy, alternating which goes first. Target: through the proxy >= 0.8x of
direct for both.

    python -m bench proxy [--seconds 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import time

from bench import broker_servers
from bench.broker_vs_lite import run_workload

BATCHED_MAX_MESSAGES = 3_000_000
TARGET_RATIO = 0.8


def _round(url: str, label: str, broker: broker_servers.Broker, proxy_url: str | None,
           seconds: float) -> dict[str, float]:
    topic = f"persistent://public/default/bench-proxy-{label}-{int(time.time() * 1000)}"
    produced = run_workload(proxy_url or url, "batched_produce", topic, seconds,
                            BATCHED_MAX_MESSAGES)
    broker.restart()
    consumed = run_workload(proxy_url or broker.service_url, "catchup_consume", topic,
                            2 * seconds + 5, int(produced["messages"]))
    return {"produce": produced["msg_per_s"], "consume": consumed["msg_per_s"]}


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench proxy")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    args, _ = parser.parse_known_args(argv)

    from pulsar_broker import testing as broker_testing

    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp:
        root = pathlib.Path(tmp)
        broker = broker_servers.start_ours(root / "standalone", journal_sync=True)
        process = broker.process  # type: ignore[attr-defined]
        proxy = broker_testing.ProxyProcess(root / "proxy", {
            "brokerServiceURL": process.service_url,
            "brokerWebServiceURL": process.web_url,
        }).start()
        results: dict[str, list[dict[str, float]]] = {"direct": [], "proxy": []}
        try:
            for number in range(args.rounds):
                order = ["direct", "proxy"] if number % 2 == 0 else ["proxy", "direct"]
                for name in order:
                    figures = _round(process.service_url, name, broker,
                                     proxy.service_url if name == "proxy" else None,
                                     args.seconds)
                    results[name].append(figures)
                    print(f"  round {number + 1} {name:6}: produce {figures['produce']:,.0f} "
                          f"msg/s, catch-up consume {figures['consume']:,.0f} msg/s", flush=True)
        finally:
            proxy.stop()
            broker.stop()
    print(f"  {'workload':22} {'direct':>12} {'proxy':>12} {'ratio':>7}  (best of "
          f"{args.rounds}; target >= {TARGET_RATIO}x)")
    for key, title in (("produce", "batched produce msg/s"),
                       ("consume", "catch-up consume msg/s")):
        direct = max(r[key] for r in results["direct"])
        proxied = max(r[key] for r in results["proxy"])
        print(f"  {title:22} {direct:12,.0f} {proxied:12,.0f} {proxied / direct:6.2f}x")
