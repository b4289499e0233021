"""The cost of TLS and token authentication: the same workloads in plain text, over TLS, and
over TLS with a JWT, against one standalone, same run.

One `pulsar standalone` (journal fsync on) with both ports (brokerServicePort and
brokerServicePortTls, certificates from a throwaway CA) and token authentication
(AuthenticationProviderToken, HS256) with anonymousUserRole set, so clients
without a token are served too (authorization off). Each round runs batched
produce, then a catch-up consume of that backlog after a broker restart (read
from storage), for each of: plain (no token: the anonymous role), TLS (no
token), TLS + token; the order rotates between rounds. Target: TLS + token >=
0.8x of plain for both workloads. Broker CPU per message is printed too: on a
shared machine it varies less than throughput does.

    python -m bench security [--seconds 5] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import tempfile
import time

from bench import broker_servers, broker_workloads
from bench.broker_vs_lite import run_workload

BATCHED_MAX_MESSAGES = 3_000_000
TARGET_RATIO = 0.8
MODES = ("plain", "tls", "tls+token")
TOKEN_PROVIDER = "org.apache.pulsar.broker.authentication.AuthenticationProviderToken"
SECRET = b"bench-security-secret-of-32-byte"


def _measured(broker: broker_servers.OursBroker, url: str, workload: str, topic: str,
              seconds: float, max_messages: int) -> tuple[dict[str, float], float]:
    """(the workload's result, broker CPU microseconds per message) of one workload."""
    pid = broker.process.pid
    before = broker_servers.cpu_s(pid)
    result = run_workload(url, workload, topic, seconds, max_messages)
    used = broker_servers.cpu_s(pid) - before
    return result, 1e6 * used / max(1.0, result["messages"])


def _round(mode: str, urls: dict[str, str], broker: broker_servers.OursBroker, trust_file: str,
           token: str, seconds: float) -> dict[str, float]:
    os.environ.pop(broker_workloads.TOKEN_ENV, None)
    os.environ[broker_workloads.TLS_TRUST_ENV] = trust_file
    if mode == "tls+token":
        os.environ[broker_workloads.TOKEN_ENV] = token
    url = urls["plain" if mode == "plain" else "tls"]
    topic = f"persistent://public/default/bench-sec-{mode.replace('+', '-')}-{time.time_ns()}"
    produced, produce_cpu = _measured(broker, url, "batched_produce", topic, seconds,
                                      BATCHED_MAX_MESSAGES)
    broker.restart()
    consumed, consume_cpu = _measured(broker, url, "catchup_consume", topic, 2 * seconds + 5,
                                      int(produced["messages"]))
    return {"produce": produced["msg_per_s"], "consume": consumed["msg_per_s"],
            "produce_cpu_us": produce_cpu, "consume_cpu_us": consume_cpu}


def run(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench security")
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    args, _ = parser.parse_known_args(argv)

    import jwt
    from pulsar_broker import testing as broker_testing
    from pulsar_common import testing_certs

    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    with tempfile.TemporaryDirectory(prefix="bench-security-") as tmp:
        root = pathlib.Path(tmp)
        pki = testing_certs.make_pki(root / "pki", hosts=("localhost",))
        secret = root / "secret.key"
        secret.write_bytes(SECRET)
        settings = {**testing_certs.broker_tls_settings(pki), "journalSyncData": "true",
                    "authenticationEnabled": "true", "authenticationProviders": TOKEN_PROVIDER,
                    "tokenSecretKey": f"file://{secret}", "anonymousUserRole": "anonymous"}
        process = broker_testing.TlsStandaloneProcess(root / "standalone" / "data", settings,
                                                      host="localhost")
        broker = broker_servers.OursBroker(process.start(broker_servers.OURS_START_TIMEOUT_S))
        urls = {"plain": f"pulsar://localhost:{process.broker_port}",
                "tls": process.service_url_tls}
        token = jwt.encode({"sub": "bench"}, SECRET, algorithm="HS256")
        try:
            for number in range(args.rounds):
                order = MODES[number % 3:] + MODES[:number % 3]
                for mode in order:
                    figures = _round(mode, urls, broker, str(pki.trust_file), token,
                                     args.seconds)
                    results[mode].append(figures)
                    print(f"  round {number + 1} {mode:9}: produce {figures['produce']:,.0f} "
                          f"msg/s ({figures['produce_cpu_us']:.1f} us broker CPU/msg), catch-up "
                          f"consume {figures['consume']:,.0f} msg/s "
                          f"({figures['consume_cpu_us']:.1f} us/msg)", flush=True)
        finally:
            broker.stop()
            for name in (broker_workloads.TOKEN_ENV, broker_workloads.TLS_TRUST_ENV):
                os.environ.pop(name, None)
    print(f"  {'workload':22} {'plain':>10} {'tls':>10} {'tls+token':>10} {'ratio':>7}  "
          f"(best of {args.rounds}; target tls+token >= {TARGET_RATIO}x plain)")
    for key, title in (("produce", "batched produce msg/s"),
                       ("consume", "catch-up consume msg/s")):
        best = {mode: max(r[key] for r in results[mode]) for mode in MODES}
        print(f"  {title:22} {best['plain']:10,.0f} {best['tls']:10,.0f} "
              f"{best['tls+token']:10,.0f} {best['tls+token'] / best['plain']:6.2f}x")
        cpu = {mode: min(r[f"{key}_cpu_us"] for r in results[mode]) for mode in MODES}
        print(f"  {'  broker CPU us/msg':22} {cpu['plain']:10.1f} {cpu['tls']:10.1f} "
              f"{cpu['tls+token']:10.1f} {cpu['plain'] / cpu['tls+token']:6.2f}x")
