"""Topic compaction with the official client: compact, then read the latest value per key."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing


def admin(standalone: broker_testing.StandaloneProcess, method: str, path: str) -> Any:
    request = urllib.request.Request(standalone.web_url + path, method=method)
    with urllib.request.urlopen(request, timeout=30) as reply:
        body = reply.read()
    return json.loads(body) if body else None


def topic_path(topic: str) -> str:
    return "/admin/v2/" + topic.replace("://", "/")


def compact(standalone: broker_testing.StandaloneProcess, topic: str,
            timeout_s: float = 60.0) -> dict[str, Any]:
    """Trigger a compaction and wait until its status is no longer RUNNING."""
    admin(standalone, "PUT", topic_path(topic) + "/compaction")
    deadline = time.monotonic() + timeout_s
    while True:
        status: dict[str, Any] = admin(standalone, "GET", topic_path(topic) + "/compaction")
        if status["status"] != "RUNNING" or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def read_compacted(client: pulsar.Client, topic: str) -> dict[str, bytes]:
    """Every message a compacted reader gets from the start, as key -> last value seen."""
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    seen: dict[str, bytes] = {}
    try:
        while reader.has_message_available():
            message = reader.read_next(10_000)
            if message.data():
                seen[message.partition_key()] = message.data()
            else:
                seen.pop(message.partition_key(), None)
    finally:
        reader.close()
    return seen


def count_compacted(client: pulsar.Client, topic: str) -> int:
    reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    count = 0
    try:
        while reader.has_message_available():
            reader.read_next(10_000)
            count += 1
    finally:
        reader.close()
    return count


def test_compaction_status_is_not_run_before_the_first_compaction(standalone, client, topic):
    client.create_producer(topic).send(b"x", partition_key="k")
    assert admin(standalone, "GET", topic_path(topic) + "/compaction") == {
        "status": "NOT_RUN", "lastError": ""}


def test_compacted_reader_gets_the_latest_value_per_key_and_no_deleted_key(
        standalone, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for version in range(3):
        for key in range(10):
            producer.send(f"{key}-v{version}".encode(), partition_key=f"k{key}")
    producer.send(b"", partition_key="k3")  # a tombstone
    assert compact(standalone, topic) == {"status": "SUCCESS", "lastError": ""}

    assert count_compacted(client, topic) == 9
    expected = {f"k{key}": f"{key}-v2".encode() for key in range(10) if key != 3}
    assert read_compacted(client, topic) == expected
    # What came after the horizon is read from the topic itself.
    producer.send(b"3-back", partition_key="k3")
    producer.send(b"0-v3", partition_key="k0")
    assert read_compacted(client, topic) == {**expected, "k3": b"3-back", "k0": b"0-v3"}
    # A reader that does not ask for the compacted view still gets every message.
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert len([reader.read_next(10_000) for _ in range(33)]) == 33
    assert not reader.has_message_available()
    reader.close()

    stats = admin(standalone, "GET", topic_path(topic) + "/stats")
    assert "__compaction" in stats["subscriptions"]
    assert stats["compaction"]["lastCompactionRemovedEventCount"] == 22
    internal = admin(standalone, "GET", topic_path(topic) + "/internalStats")
    assert internal["compactedLedger"]["entries"] == 9
    assert "CompactedTopicLedger" in internal["cursors"]["__compaction"]["properties"]


@pytest.mark.parametrize("compression", [pulsar.CompressionType.NONE, pulsar.CompressionType.LZ4,
                                         pulsar.CompressionType.ZLib,
                                         pulsar.CompressionType.ZSTD,
                                         pulsar.CompressionType.SNAPPY])
def test_batches_are_compacted_message_by_message(standalone, client, topic, compression):
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_messages=50,
                                      batching_max_publish_delay_ms=100,
                                      compression_type=compression)
    for version in range(4):
        for key in range(25):
            producer.send_async(f"{key}-v{version}".encode(), None, partition_key=f"k{key}")
    producer.send_async(b"", None, partition_key="k7")
    producer.flush()
    assert compact(standalone, topic)["status"] == "SUCCESS"
    expected = {f"k{key}": f"{key}-v3".encode() for key in range(25) if key != 7}
    assert read_compacted(client, topic) == expected
    assert count_compacted(client, topic) == 24


def test_a_second_compaction_merges_the_first_view_with_what_came_after(
        standalone, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for key in range(5):
        producer.send(f"{key}-a".encode(), partition_key=f"k{key}")
    assert compact(standalone, topic)["status"] == "SUCCESS"
    producer.send(b"1-b", partition_key="k1")
    producer.send(b"", partition_key="k2")
    producer.send(b"9-a", partition_key="k9")
    assert compact(standalone, topic)["status"] == "SUCCESS"
    expected = {"k0": b"0-a", "k1": b"1-b", "k3": b"3-a", "k4": b"4-a", "k9": b"9-a"}
    assert read_compacted(client, topic) == expected
    assert count_compacted(client, topic) == 5
    # Nothing new: a compaction is a success that changes nothing.
    assert compact(standalone, topic)["status"] == "SUCCESS"
    assert read_compacted(client, topic) == expected


def test_table_view_holds_the_latest_value_per_key(standalone, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for version in range(3):
        for key in range(4):
            producer.send(f"{key}-v{version}".encode(), partition_key=f"k{key}")
    producer.send(b"", partition_key="k1")
    assert compact(standalone, topic)["status"] == "SUCCESS"
    table = client.create_table_view(topic)
    try:
        entries: dict[str, bytes] = {}
        table.for_each(lambda key, value: entries.__setitem__(key, value))
        assert entries == {"k0": b"0-v2", "k2": b"2-v2", "k3": b"3-v2"}
    finally:
        table.close()


def test_durable_compacted_consumer_reads_the_view_then_the_topic(standalone, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    for version in range(3):
        producer.send(f"v{version}".encode(), partition_key="only")
    assert compact(standalone, topic)["status"] == "SUCCESS"
    consumer = client.subscribe(topic, "compacted", is_read_compacted=True,
                                initial_position=pulsar.InitialPosition.Earliest)
    producer.send(b"v3", partition_key="only")
    got = [m.data() for m in broker_testing.receive_all(consumer, 2)]
    assert got == [b"v2", b"v3"]
    assert broker_testing.nothing_more(consumer)
    consumer.close()


def test_read_compacted_is_refused_on_shared_subscriptions(standalone, client, topic):
    client.create_producer(topic).send(b"x", partition_key="k")
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(topic, "shared", consumer_type=pulsar.ConsumerType.Shared,
                         is_read_compacted=True)


def test_compacting_a_partitioned_topic_is_refused(standalone, topic):
    request = urllib.request.Request(standalone.web_url + topic_path(topic) + "/partitions",
                                     data=b"2", method="PUT",
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()
    with pytest.raises(urllib.error.HTTPError) as failure:
        admin(standalone, "PUT", topic_path(topic) + "/compaction")
    assert failure.value.code == 405
