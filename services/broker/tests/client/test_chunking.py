"""Messages larger than maxMessageSize, split by the official client (`chunking_enabled`)
and put back together by it from what our broker stores and delivers."""

from __future__ import annotations

import os
import pathlib

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
