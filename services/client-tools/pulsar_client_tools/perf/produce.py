"""`pulsar-perf produce`: publish at a rate with N producers over T topics and time each publish.

Publish latency is the time from the `send_async` call to its callback, so it
includes the time a message waits in the client's batch and in flight.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pulsar
from pulsar_common import errors as common_errors
from pulsar_common import naming

from pulsar_client_tools.client import connection, rate
from pulsar_client_tools.perf import control, histogram, options, stats

COMPRESSION = {
    "NONE": pulsar.CompressionType.NONE,
    "LZ4": pulsar.CompressionType.LZ4,
    "ZLIB": pulsar.CompressionType.ZLib,
    "ZSTD": pulsar.CompressionType.ZSTD,
    "SNAPPY": pulsar.CompressionType.SNAPPY,
}
DEFAULT_MAX_OUTSTANDING = 1000
DRAIN_TIMEOUT_S = 30.0
ACQUIRE_SLICE_S = 0.2
BATCHED_SAMPLE_EVERY = 100
#: -mk: how each message's key is made.
KEY_MODES = ("autoIncrement", "random")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_common(parser)
    parser.add_argument(
        "-s", "--size", type=int, default=1024, help="message size in bytes (default 1024)"
    )
    parser.add_argument(
        "-n", "--num-producers", type=int, default=1, help="producers per topic (default 1)"
    )
    parser.add_argument(
        "-b",
        "--batch-time-window",
        type=float,
        default=1.0,
        help="batching window in ms (default 1)",
    )
    parser.add_argument(
        "-bm",
        "--batch-max-messages",
        type=int,
        default=1000,
        help="messages per batch at most (default 1000)",
    )
    parser.add_argument(
        "-bb",
        "--batch-max-bytes",
        type=int,
        default=4 * 1024 * 1024,
        help="bytes per batch at most (default 4 MiB)",
    )
    parser.add_argument(
        "-db", "--disable-batching", action="store_true", help="send every message as its own entry"
    )
    parser.add_argument(
        "-o",
        "--max-outstanding",
        type=int,
        default=0,
        help=f"messages in flight at most, over all producers (0 means {DEFAULT_MAX_OUTSTANDING})",
    )
    parser.add_argument(
        "-z",
        "--compression",
        choices=list(COMPRESSION),
        default="NONE",
        help="compression of batches (default NONE)",
    )
    parser.add_argument(
        "-mk",
        "--message-key-generation-mode",
        choices=list(KEY_MODES),
        default=None,
        help="give every message a key: autoIncrement (0, 1, 2, ...) or random "
        "(default: no key)",
    )
    parser.add_argument(
        "-k", "--encryption-key-name", default=None, help="encrypt messages with this key name"
    )
    parser.add_argument(
        "-v",
        "--encryption-key-value-file",
        default=None,
        help="public key (PEM file) of --encryption-key-name",
    )
    parser.add_argument("-pn", "--producer-name", default=None, help="producer name prefix")
    parser.add_argument(
        "-ch", "--chunking", action="store_true", help="split messages larger than the broker's "
        "maxMessageSize into chunks (needs --disable-batching)"
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=0,
        help="create each topic as a partitioned topic with this many partitions first "
        "(needs --admin-url)",
    )
    parser.add_argument(
        "-ls",
        "--latency-sample-every",
        type=int,
        default=0,
        help="time one message in N; counts stay exact. 0 (default) times "
        f"every message without batching and 1 in {BATCHED_SAMPLE_EVERY} "
        "with batching, where a Python callback per message would "
        "limit the client more than the broker",
    )


def sample_every(args: argparse.Namespace, producers: int, outstanding_limit: int) -> int:
    """One timed message in N. Untimed messages hold their in-flight permits until a timed one
    completes, so N is capped to keep N x producers within the in-flight limit."""
    if args.latency_sample_every > 0:
        wanted = int(args.latency_sample_every)
    else:
        wanted = 1 if args.disable_batching else BATCHED_SAMPLE_EVERY
    return max(1, min(wanted, outstanding_limit // max(1, producers)))


class ProduceRun:
    """One load run: producers, the send loop, and the callback accounting."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.throughput = stats.Throughput()
        self.recorder = histogram.Recorder()
        self.stop = control.StopControl(args.test_duration)
        limit = args.max_outstanding or DEFAULT_MAX_OUTSTANDING
        self.outstanding_limit = limit
        producers = len(options.expand_topics(args.topics, args.num_topics)) * args.num_producers
        self.sample_every = sample_every(args, producers, limit)
        self.outstanding = threading.Semaphore(limit)
        self.payload = os.urandom(args.size)

    def create_producers(self, client: pulsar.Client) -> list[pulsar.Producer]:
        a = self.args
        encryption: dict[str, object] = {}
        if a.encryption_key_name:
            if not a.encryption_key_value_file:
                raise common_errors.ConfigError(
                    "--encryption-key-name needs --encryption-key-value-file (a public key)")
            encryption = {"encryption_key": a.encryption_key_name,
                          "crypto_key_reader": pulsar.CryptoKeyReader(
                              a.encryption_key_value_file, "")}
        if a.chunking and not a.disable_batching:
            raise common_errors.ConfigError("--chunking needs --disable-batching")
        topics = options.expand_topics(a.topics, a.num_topics)
        return [
            client.create_producer(
                topic,
                producer_name=(f"{a.producer_name}-{t}-{i}" if a.producer_name else None),
                chunking_enabled=a.chunking,
                **encryption,
                batching_enabled=not a.disable_batching,
                batching_max_messages=a.batch_max_messages,
                batching_max_allowed_size_in_bytes=a.batch_max_bytes,
                batching_max_publish_delay_ms=max(1, int(a.batch_time_window)),
                compression_type=COMPRESSION[a.compression],
                max_pending_messages=self.outstanding_limit + a.batch_max_messages,
                block_if_queue_full=False,
                send_timeout_millis=30000,
            )
            for t, topic in enumerate(topics)
            for i in range(a.num_producers)
        ]

    def _on_sent(
        self,
        started_ns: int,
        messages: int,
        size: int,
        result: pulsar.Result,
        message_id: pulsar.MessageId,
    ) -> None:
        """Callback of a timed message; it also stands for the untimed ones sent before it."""
        if result == pulsar.Result.Ok:
            self.recorder.record((time.perf_counter_ns() - started_ns) // 1000)
            self.throughput.add_many(messages, messages * size)
        else:
            self.throughput.fail_many(messages)
        self.outstanding.release(messages)

    def send_loop(self, producers: list[pulsar.Producer]) -> list[int]:
        """Send until stopped; returns, per producer, the messages sent after its last timed one.

        Only one message in `latency_sample_every` gets a callback: a Python
        callback per message costs more than the send itself. Receipts come
        back in order per producer, so a timed message's callback also
        accounts for the untimed messages sent before it on that producer.
        """
        limiter = rate.RateLimiter(self.args.rate)
        payload, size = self.payload, len(self.payload)
        key_mode = self.args.message_key_generation_mode
        key: str | None = None
        every = self.sample_every
        untimed = [0] * len(producers)
        limit, sent = self.args.num_messages, 0
        while not self.stop.should_stop() and (limit <= 0 or sent < limit):
            index = sent % len(producers)
            limiter.acquire()
            if not self.outstanding.acquire(timeout=ACQUIRE_SLICE_S):
                continue
            untimed[index] += 1
            callback = None
            if untimed[index] >= every:
                callback = functools.partial(
                    self._on_sent, time.perf_counter_ns(), untimed[index], size
                )
                untimed[index] = 0
            if key_mode == "autoIncrement":
                key = str(sent)
            elif key_mode == "random":
                key = str(random.getrandbits(31))
            producers[index].send_async(payload, callback, partition_key=key)
            sent += 1
        return untimed

    def drain(self, producers: list[pulsar.Producer], untimed: list[int]) -> None:
        """Wait until every message in flight is acknowledged (flush), then count the tail."""
        for producer, tail in zip(producers, untimed):
            try:
                producer.flush()
            except pulsar.PulsarException:
                self.throughput.fail_many(tail)
            else:
                self.throughput.add_many(tail, tail * len(self.payload))
        # Callbacks of timed messages may still be running on the client's thread.
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        for _ in range(self.outstanding_limit - sum(untimed)):
            if not self.outstanding.acquire(timeout=max(0.0, deadline - time.monotonic())):
                break


def create_partitioned_topics(admin_url: str, topics: list[str], partitions: int) -> None:
    """PUT .../partitions for each topic; one that exists already (409) is left as it is."""
    for text in topics:
        name = naming.TopicName.parse(text)
        quote = urllib.parse.quote
        url = (f"{admin_url.rstrip('/')}/admin/v2/{name.domain.value}/{quote(name.tenant)}/"
               f"{quote(name.namespace)}/{quote(name.local_name)}/partitions")
        request = urllib.request.Request(url, data=json.dumps(partitions).encode(), method="PUT",
                                         headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(request, timeout=30).close()
        except urllib.error.HTTPError as exc:
            if exc.code != 409:
                raise common_errors.ConfigError(
                    f"cannot create {text} with {partitions} partitions: {exc.code} "
                    f"{exc.read().decode(errors='replace')}") from exc


def run(args: argparse.Namespace) -> int:
    perf = ProduceRun(args)
    perf.stop.install_signal_handlers()
    if args.partitions > 0:
        if not args.admin_url:
            raise common_errors.ConfigError("--partitions needs --admin-url")
        create_partitioned_topics(args.admin_url,
                                  options.expand_topics(args.topics, args.num_topics),
                                  args.partitions)
    client = connection.client_from_args(args, args.num_io_threads)
    try:
        producers = perf.create_producers(client)
        print(
            f"Created {len(producers)} producers; sending {args.size} byte messages, "
            f"timing 1 in {perf.sample_every}",
            flush=True,
        )
        reporter = stats.Reporter(
            "produced",
            "sent",
            perf.throughput,
            perf.recorder,
            args.stats_interval_seconds,
            True,
            lambda line: print(line, flush=True),
        )
        reporter.start()
        perf.stop.begin()
        perf.recorder.start_warmup(args.warmup_time)
        try:
            untimed = perf.send_loop(producers)
            perf.drain(producers, untimed)
        finally:
            reporter.finish(args.histogram_file)
        for producer in producers:
            producer.close()
    finally:
        client.close()
    return 0
