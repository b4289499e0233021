"""`pulsar-perf consume`: receive with N consumers over T topics, acking, and time end to end.

Latency here is end to end: receive time minus the message's publish time
(both from this machine's clock when producer and consumer run side by side).
"""

from __future__ import annotations

import argparse
import threading
import time

import pulsar

from pulsar_client_tools.client import connection, rate
from pulsar_client_tools.client import consume as client_consume
from pulsar_client_tools.perf import control, histogram, options, stats

RECEIVE_SLICE_MS = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_common(parser)
    parser.add_argument(
        "-s",
        "--subscriber-name",
        "--subscription-name",
        dest="subscription",
        default="sub",
        help="subscription name (default sub)",
    )
    parser.add_argument(
        "-st",
        "--subscription-type",
        default="Exclusive",
        choices=list(client_consume.SUBSCRIPTION_TYPES),
        help="subscription type (default Exclusive)",
    )
    parser.add_argument(
        "-sp",
        "--subscription-position",
        default="Latest",
        choices=list(client_consume.POSITIONS),
        help="where a new subscription starts (default Latest)",
    )
    parser.add_argument(
        "-n", "--num-consumers", type=int, default=1, help="consumers per topic (default 1)"
    )
    parser.add_argument(
        "-q",
        "--receiver-queue-size",
        type=int,
        default=1000,
        help="receiver queue size per consumer (default 1000)",
    )


class ConsumeRun:
    """Consumers, one receive loop per consumer thread, and the shared accounting."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.throughput = stats.Throughput()
        self.recorder = histogram.Recorder()
        self.stop = control.StopControl(args.test_duration)
        self._received = 0
        self._count_lock = threading.Lock()

    def subscribe(self, client: pulsar.Client) -> list[pulsar.Consumer]:
        a = self.args
        return [
            client.subscribe(
                topic,
                a.subscription,
                consumer_type=client_consume.SUBSCRIPTION_TYPES[a.subscription_type],
                initial_position=client_consume.POSITIONS[a.subscription_position],
                receiver_queue_size=a.receiver_queue_size,
            )
            for topic in options.expand_topics(a.topics, a.num_topics)
            for _ in range(a.num_consumers)
        ]

    def _take_one(self) -> bool:
        """Count one message against --num-messages; False once the total is reached."""
        limit = self.args.num_messages
        with self._count_lock:
            if limit > 0 and self._received >= limit:
                self.stop.event.set()
                return False
            self._received += 1
            return True

    def receive_loop(self, consumer: pulsar.Consumer, rate_per_s: float) -> None:
        limiter = rate.RateLimiter(rate_per_s)
        while not self.stop.should_stop():
            limiter.acquire()
            try:
                message = consumer.receive(RECEIVE_SLICE_MS)
            except pulsar.Timeout:
                continue
            if not self._take_one():
                break
            latency_ms = int(time.time() * 1000) - message.publish_timestamp()
            self.recorder.record(max(0, latency_ms) * 1000)
            self.throughput.add(len(message.data()))
            consumer.acknowledge(message)
            if self.args.num_messages > 0 and self._received >= self.args.num_messages:
                self.stop.event.set()


def run(args: argparse.Namespace) -> int:
    perf = ConsumeRun(args)
    perf.stop.install_signal_handlers()
    client = connection.client_from_args(args, args.num_io_threads)
    try:
        consumers = perf.subscribe(client)
        print(f"Created {len(consumers)} consumers on subscription {args.subscription}", flush=True)
        reporter = stats.Reporter(
            "received",
            "received",
            perf.throughput,
            perf.recorder,
            args.stats_interval_seconds,
            False,
            lambda line: print(line, flush=True),
        )
        per_consumer_rate = args.rate / len(consumers) if args.rate > 0 else 0.0
        threads = [
            threading.Thread(
                target=perf.receive_loop,
                args=(c, per_consumer_rate),
                name=f"perf-consumer-{i}",
                daemon=True,
            )
            for i, c in enumerate(consumers)
        ]
        reporter.start()
        perf.stop.begin()
        perf.recorder.start_warmup(args.warmup_time)
        for thread in threads:
            thread.start()
        try:
            wait_for_loops(perf.stop, threads)
        finally:
            reporter.finish(args.histogram_file)
        for consumer in consumers:
            consumer.close()
    finally:
        client.close()
    return 0


def wait_for_loops(stop: control.StopControl, threads: list[threading.Thread]) -> None:
    """Wait in the main thread (so signals are handled) until every receive loop ended."""
    while any(thread.is_alive() for thread in threads):
        stop.should_stop()
        stop.event.wait(0.2)
        for thread in threads:
            thread.join(timeout=0.05 if not stop.event.is_set() else RECEIVE_SLICE_MS / 1000 + 1)
