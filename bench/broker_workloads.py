"""The client side of bench.broker_vs_lite: one workload per process, one JSON line out.

Each workload runs in its own process (the official client library has its
own threads, and the broker under test is another process), against any
broker that speaks the Pulsar protocol:

    python -m bench.broker_workloads batched_produce --url pulsar://127.0.0.1:6650 --topic T

Throughput workloads attach no Python callback to their sends: a callback per
message costs the client more than the send itself, so they count
acknowledgements by flushing at the end instead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable

import pulsar
import pulsar.asyncio

SMALL_PAYLOAD_BYTES = 100
LARGE_PAYLOAD_BYTES = 64 * 1024
BATCH_MAX_MESSAGES = 1000
BATCH_DELAY_MS = 1
SMALL_PENDING_MAX = 50_000
LARGE_PENDING_MAX = 256
CHECK_CLOCK_EVERY = 1000
RECEIVE_TIMEOUT_MS = 10_000
LATENCY_WARMUP_SENDS = 50
#: Producer creations in flight at once in create_producers (each on its own new topic).
CREATE_IN_FLIGHT = 64


#: Set by bench.security: the CA file for pulsar+ssl:// URLs and a token to authenticate with.
TLS_TRUST_ENV = "BENCH_TLS_TRUST_CERTS"
TOKEN_ENV = "BENCH_AUTH_TOKEN"


def _client(url: str) -> pulsar.Client:
    logger = pulsar.FileLogger(pulsar.LoggerLevel.Warn, "/dev/stderr")
    token = os.environ.get(TOKEN_ENV)
    return pulsar.Client(url, operation_timeout_seconds=30, logger=logger,
                         tls_trust_certs_file_path=os.environ.get(TLS_TRUST_ENV),
                         authentication=pulsar.AuthenticationToken(token) if token else None)


def _send_for(
    producer: pulsar.Producer, payload: bytes, max_messages: int, seconds: float
) -> tuple[int, float]:
    """Send asynchronously until `max_messages` or `seconds`, then flush; (sent, elapsed)."""
    started = time.perf_counter()
    deadline = started + seconds
    sent = 0
    while sent < max_messages:
        producer.send_async(payload, None)
        sent += 1
        if sent % CHECK_CLOCK_EVERY == 0 and time.perf_counter() >= deadline:
            break
    producer.flush()
    return sent, time.perf_counter() - started


def batched_produce(client: pulsar.Client, args: argparse.Namespace) -> dict[str, float]:
    producer = client.create_producer(
        args.topic,
        batching_enabled=True,
        batching_max_messages=BATCH_MAX_MESSAGES,
        batching_max_publish_delay_ms=BATCH_DELAY_MS,
        batching_max_allowed_size_in_bytes=4 * 1024 * 1024,
        max_pending_messages=SMALL_PENDING_MAX,
        block_if_queue_full=True,
    )
    sent, elapsed = _send_for(
        producer, os.urandom(SMALL_PAYLOAD_BYTES), args.max_messages, args.seconds
    )
    producer.close()
    return {"messages": sent, "seconds": elapsed, "msg_per_s": sent / elapsed}


def subscribe(client: pulsar.Client, args: argparse.Namespace) -> dict[str, float]:
    """Create the durable subscription `--subscription` at the topic's end and leave it, so that
    what is produced next becomes its backlog (read by catchup_consume while still fresh)."""
    client.subscribe(args.topic, args.subscription).close()
    return {}


def catchup_consume(client: pulsar.Client, args: argparse.Namespace) -> dict[str, float]:
    """Read a backlog of `max_messages` through `--subscription`, acking cumulatively.

    A subscription that does not exist yet starts at the earliest message; one made
    beforehand by `subscribe` reads what was produced since."""
    started = time.perf_counter()
    consumer = client.subscribe(
        args.topic,
        args.subscription,
        initial_position=pulsar.InitialPosition.Earliest,
        receiver_queue_size=args.receiver_queue_size,
    )
    received = 0
    message = None
    deadline = started + args.seconds
    while received < args.max_messages:
        message = consumer.receive(RECEIVE_TIMEOUT_MS)
        received += 1
        if received % CHECK_CLOCK_EVERY == 0:
            consumer.acknowledge_cumulative(message)
            if time.perf_counter() >= deadline:
                break
    elapsed = time.perf_counter() - started
    if message is not None:
        consumer.acknowledge_cumulative(message)
    consumer.close()
    return {"messages": received, "seconds": elapsed, "msg_per_s": received / elapsed}


def _percentile(sorted_values: list[float], percentile: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(percentile / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def sync_latency(client: pulsar.Client, args: argparse.Namespace) -> dict[str, float]:
    """Unbatched synchronous publish: each send waits for its receipt before the next one."""
    producer = client.create_producer(args.topic, batching_enabled=False)
    payload = os.urandom(SMALL_PAYLOAD_BYTES)
    for _ in range(LATENCY_WARMUP_SENDS):
        producer.send(payload)
    latencies_ms: list[float] = []
    deadline = time.perf_counter() + args.seconds
    while len(latencies_ms) < args.max_messages and time.perf_counter() < deadline:
        started = time.perf_counter()
        producer.send(payload)
        latencies_ms.append((time.perf_counter() - started) * 1000)
    producer.close()
    latencies_ms.sort()
    return {
        "messages": len(latencies_ms),
        "p50_ms": _percentile(latencies_ms, 50),
        "p99_ms": _percentile(latencies_ms, 99),
        "max_ms": latencies_ms[-1],
    }


def large_produce(client: pulsar.Client, args: argparse.Namespace) -> dict[str, float]:
    producer = client.create_producer(
        args.topic,
        batching_enabled=False,
        max_pending_messages=LARGE_PENDING_MAX,
        block_if_queue_full=True,
    )
    sent, elapsed = _send_for(
        producer, os.urandom(LARGE_PAYLOAD_BYTES), args.max_messages, args.seconds
    )
    producer.close()
    return {
        "messages": sent,
        "seconds": elapsed,
        "mb": sent * LARGE_PAYLOAD_BYTES / 1e6,
        "mb_per_s": sent * LARGE_PAYLOAD_BYTES / elapsed / 1e6,
    }


async def _create_producers(url: str, topic: str, count: int) -> float:
    """Seconds to create `count` producers on as many new topics, CREATE_IN_FLIGHT at a time."""
    client = pulsar.asyncio.Client(url, operation_timeout_seconds=30)
    in_flight = asyncio.Semaphore(CREATE_IN_FLIGHT)
    producers: list[pulsar.asyncio.Producer] = []

    async def create(index: int) -> None:
        async with in_flight:
            producers.append(await client.create_producer(f"{topic}-{index}"))

    try:
        started = time.perf_counter()
        await asyncio.gather(*(create(i) for i in range(count)))
        elapsed = time.perf_counter() - started
        await asyncio.gather(*(p.close() for p in producers))
    finally:
        await client.close()
    return elapsed


def create_producers(client: pulsar.Client, args: argparse.Namespace) -> dict[str, float]:
    """Create `max_messages` producers, each on a topic of its own that does not exist yet."""
    elapsed = asyncio.run(_create_producers(args.url, args.topic, args.max_messages))
    return {"producers": args.max_messages, "seconds": elapsed,
            "per_s": args.max_messages / elapsed}


WORKLOADS: dict[str, Callable[[pulsar.Client, argparse.Namespace], dict[str, float]]] = {
    "batched_produce": batched_produce,
    "subscribe": subscribe,
    "catchup_consume": catchup_consume,
    "sync_latency": sync_latency,
    "large_produce": large_produce,
    "create_producers": create_producers,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.broker_workloads")
    parser.add_argument("workload", choices=list(WORKLOADS))
    parser.add_argument("--url", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--max-messages", type=int, default=1_000_000)
    parser.add_argument("--receiver-queue-size", type=int, default=1000)
    parser.add_argument("--subscription", default="bench-catchup")
    args = parser.parse_args(argv)
    client = _client(args.url)
    started_cpu_s = time.process_time()
    started_thread_cpu_s = time.thread_time()
    try:
        result = WORKLOADS[args.workload](client, args)
        # This process's CPU (every thread: the C++ client's too) over the workload, so a
        # table can tell a client-bound workload from a broker-bound one; and that of this
        # thread alone (the Python loop calling send_async or receive): near 100% of the
        # workload's time, it is what bounds the rate.
        result["client_cpu_s"] = time.process_time() - started_cpu_s
        result["client_thread_cpu_s"] = time.thread_time() - started_thread_cpu_s
    finally:
        client.close()
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
