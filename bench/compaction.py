"""Topic compaction: time to compact, and reading the compacted view vs the whole topic.

One `pulsar standalone` (journalSyncData off: the subject is the compactor,
not the disk). --messages messages of 100 B over --keys keys (round-robin,
so every key has messages/keys versions) are published in batches (up to
1000 a batch, LZ4, as a producer wanting throughput sends them). Then:

- compaction: `PUT .../compaction`, polled until the status is SUCCESS;
  seconds, and messages/s read by the compactor (it reads the topic twice:
  once to find each key's latest message, once to write the survivors);
- read, full topic: a reader from the earliest message until it has every
  message (messages/s, seconds);
- read, compacted view: a reader with is_read_compacted=True until it has
  every key once (seconds), the same client settings.

    python -m bench compaction [--messages 1000000] [--keys 10000]
"""

from __future__ import annotations

import argparse
import json
import pathlib
import tempfile
import time
import urllib.request
import uuid

MESSAGE_SIZE = 100


def _request(web_url: str, method: str, path: str) -> object:
    request = urllib.request.Request(web_url + path, method=method)
    with urllib.request.urlopen(request, timeout=60) as reply:
        body = reply.read()
    return json.loads(body) if body else None


def _publish(client: object, topic: str, messages: int, keys: int) -> float:
    import pulsar

    assert isinstance(client, pulsar.Client)
    producer = client.create_producer(
        topic, batching_enabled=True, batching_max_messages=1000,
        batching_max_publish_delay_ms=10, block_if_queue_full=True,
        max_pending_messages=10_000, compression_type=pulsar.CompressionType.LZ4)
    failures: list[object] = []
    started = time.monotonic()
    for i in range(messages):
        key = i % keys
        value = f"{key}:{i}:".encode().ljust(MESSAGE_SIZE, b"x")
        producer.send_async(value, lambda result, _id: failures.append(result)
                            if result != pulsar.Result.Ok else None, partition_key=f"k{key}")
    producer.flush()
    elapsed = time.monotonic() - started
    producer.close()
    if failures:
        raise RuntimeError(f"{len(failures)} sends failed: {failures[0]}")
    return elapsed


def _read(client: object, topic: str, compacted: bool, expected: int) -> float:
    import pulsar

    assert isinstance(client, pulsar.Client)
    started = time.monotonic()
    reader = client.create_reader(topic, pulsar.MessageId.earliest,
                                  receiver_queue_size=10_000, is_read_compacted=compacted)
    count = 0
    while count < expected:
        reader.read_next(30_000)
        count += 1
    elapsed = time.monotonic() - started
    reader.close()
    return elapsed


def _compact(web_url: str, topic: str) -> float:
    path = "/admin/v2/" + topic.replace("://", "/") + "/compaction"
    started = time.monotonic()
    _request(web_url, "PUT", path)
    while True:
        status = _request(web_url, "GET", path)
        assert isinstance(status, dict)
        if status["status"] == "SUCCESS":
            return time.monotonic() - started
        if status["status"] == "ERROR":
            raise RuntimeError(f"compaction failed: {status['lastError']}")
        time.sleep(0.05)


def run(argv: list[str]) -> None:
    import pulsar
    from pulsar_broker import testing as broker_testing

    parser = argparse.ArgumentParser(prog="bench compaction")
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as tmp:
        node = broker_testing.StandaloneProcess(pathlib.Path(tmp) / "data",
                                                {"journalSyncData": "false"})
        node.start()
        try:
            client = pulsar.Client(node.service_url, operation_timeout_seconds=60,
                                   logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
            topic = f"persistent://public/default/compaction-{uuid.uuid4().hex[:8]}"
            publish_s = _publish(client, topic, args.messages, args.keys)
            print(f"published {args.messages} messages over {args.keys} keys in "
                  f"{publish_s:.1f}s ({args.messages / publish_s:,.0f} msg/s)")
            compact_s = _compact(node.web_url, topic)
            print(f"compaction: {compact_s:.1f}s ({args.messages / compact_s:,.0f} msg/s "
                  f"of topic compacted)")
            full_s = _read(client, topic, False, args.messages)
            print(f"read full topic: {full_s:.2f}s ({args.messages / full_s:,.0f} msg/s)")
            compacted_s = _read(client, topic, True, args.keys)
            print(f"read compacted view ({args.keys} keys): {compacted_s:.2f}s "
                  f"({full_s / compacted_s:.0f}x faster than the full topic)")
            client.close()
        finally:
            node.stop()


if __name__ == "__main__":
    import sys

    run(sys.argv[1:])
