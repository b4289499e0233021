"""`pulsar-perf read`: readers over T topics from a start message id, timed end to end.

As Apache's: `-m/--start-message-id` is `earliest` (the default), `latest`
or `ledgerId:entryId`; `-n/--num-messages` stops after that many messages in
all. Latency is receive time minus publish time, as for `consume`; nothing is
acknowledged and no subscription is left behind.
"""

from __future__ import annotations

import argparse
import threading
import time

import pulsar

from pulsar_client_tools.client import connection, rate
from pulsar_client_tools.client import read as client_read
from pulsar_client_tools.perf import consume, control, histogram, options, stats

READ_SLICE_MS = 200


def add_arguments(parser: argparse.ArgumentParser) -> None:
    options.add_common(parser, num_messages_flags=("-n", "--num-messages"))
    parser.add_argument(
        "-m",
        "--start-message-id",
        default="earliest",
        help="earliest (default), latest or ledgerId:entryId",
    )
    parser.add_argument(
        "-q",
        "--receiver-queue-size",
        type=int,
        default=1000,
        help="receiver queue size per reader (default 1000)",
    )


class ReadRun:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.throughput = stats.Throughput()
        self.recorder = histogram.Recorder()
        self.stop = control.StopControl(args.test_duration)
        self._read = 0
        self._count_lock = threading.Lock()

    def _take_one(self) -> bool:
        limit = self.args.num_messages
        with self._count_lock:
            if limit > 0 and self._read >= limit:
                self.stop.event.set()
                return False
            self._read += 1
            if limit > 0 and self._read >= limit:
                self.stop.event.set()
            return True

    def read_loop(self, reader: pulsar.Reader, rate_per_s: float) -> None:
        limiter = rate.RateLimiter(rate_per_s)
        while not self.stop.should_stop():
            limiter.acquire()
            try:
                message = reader.read_next(READ_SLICE_MS)
            except pulsar.Timeout:
                continue
            if not self._take_one():
                break
            latency_ms = int(time.time() * 1000) - message.publish_timestamp()
            self.recorder.record(max(0, latency_ms) * 1000)
            self.throughput.add(len(message.data()))


def run(args: argparse.Namespace) -> int:
    start = client_read.parse_message_id(args.start_message_id)
    perf = ReadRun(args)
    perf.stop.install_signal_handlers()
    client = connection.client_from_args(args, args.num_io_threads)
    try:
        readers = [client.create_reader(topic, start, receiver_queue_size=args.receiver_queue_size)
                   for topic in options.expand_topics(args.topics, args.num_topics)]
        print(f"Created {len(readers)} readers", flush=True)
        reporter = stats.Reporter("read", "received", perf.throughput, perf.recorder,
                                  args.stats_interval_seconds, False,
                                  lambda line: print(line, flush=True))
        per_reader_rate = args.rate / len(readers) if args.rate > 0 else 0.0
        threads = [threading.Thread(target=perf.read_loop, args=(reader, per_reader_rate),
                                    name=f"perf-reader-{i}", daemon=True)
                   for i, reader in enumerate(readers)]
        reporter.start()
        perf.stop.begin()
        perf.recorder.start_warmup(args.warmup_time)
        for thread in threads:
            thread.start()
        try:
            consume.wait_for_loops(perf.stop, threads)
        finally:
            reporter.finish(args.histogram_file)
        for reader in readers:
            reader.close()
    finally:
        client.close()
    return 0
