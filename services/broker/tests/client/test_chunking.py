"""Messages larger than maxMessageSize, split by the official client (`chunking_enabled`)
and put back together by it from what our broker stores and delivers."""

from __future__ import annotations

import os
import pathlib
import urllib.request
import uuid

import pulsar

from pulsar_broker import testing as broker_testing

#: Over the 5 MiB default maxMessageSize: the client splits it into three chunks.
LARGE_BYTES = 12 * 1024 * 1024


def test_a_chunked_message_arrives_whole_between_small_ones(client: pulsar.Client,
                                                           topic: str) -> None:
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False)
    large = os.urandom(LARGE_BYTES)
    producer.send(b"before")
    producer.send(large)
    producer.send(b"after")
    received = broker_testing.receive_all(consumer, 3, timeout_ms=30_000)
    assert [len(m.data()) for m in received] == [6, LARGE_BYTES, 5]
    assert received[1].data() == large


def test_a_chunked_message_arrives_whole_on_a_namespace_with_deduplication(
        standalone: broker_testing.StandaloneProcess, client: pulsar.Client) -> None:
    # Every chunk carries the message's sequence id: deduplication must not take the chunks
    # after the first for duplicates (they were acknowledged and dropped, and the message
    # never reached a consumer).
    namespace = f"public/chunks-dedup-{uuid.uuid4().hex[:8]}"
    _admin(standalone, "PUT", f"/admin/v2/namespaces/{namespace}", b"{}")
    _admin(standalone, "POST", f"/admin/v2/namespaces/{namespace}/deduplication", b"true")
    topic = f"persistent://{namespace}/chunks"
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, producer_name="chunker", chunking_enabled=True,
                                      batching_enabled=False)
    large = os.urandom(LARGE_BYTES)
    producer.send(b"before")
    producer.send(large)
    producer.send(b"after")
    received = broker_testing.receive_all(consumer, 3, timeout_ms=30_000)
    assert [m.data() for m in received] == [b"before", large, b"after"]


def _admin(standalone: broker_testing.StandaloneProcess, method: str, path: str,
           body: bytes) -> None:
    request = urllib.request.Request(f"{standalone.web_url}{path}", data=body, method=method,
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as reply:
        assert reply.status in (200, 204)


def test_chunked_messages_are_read_back_whole_after_a_broker_restart(
        tmp_path: pathlib.Path) -> None:
    node = broker_testing.StandaloneProcess(tmp_path / "data", {"journalSyncData": "true"})
    node.start()
    try:
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        producer = client.create_producer("chunks-kept", chunking_enabled=True,
                                          batching_enabled=False)
        bodies = [os.urandom(LARGE_BYTES // 2 + i) for i in range(3)]
        ids = [producer.send(body) for body in bodies]
        client.close()
        node.stop()
        node.start()
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        reader = client.create_reader("chunks-kept", pulsar.MessageId.earliest)
        read = [reader.read_next(30_000) for _ in bodies]
        assert [m.data() for m in read] == bodies
        assert [str(m.message_id()) for m in read] == [str(i) for i in ids]
        client.close()
    finally:
        node.stop()
