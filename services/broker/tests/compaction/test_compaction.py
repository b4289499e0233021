"""Topic compaction with the official client: compact, then read the latest value per key;
automatic compaction past a namespace's threshold, and a standalone SIGKILLed in the middle
of a compaction (no key lost, no value back)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
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


def pulsar_admin(standalone: broker_testing.StandaloneProcess, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "pulsar_client_tools.admin.main", *args],
                            env={**os.environ, "PULSAR_ADMIN_URL": standalone.web_url},
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_pulsar_admin_compacts_and_reports_and_sets_the_threshold(standalone, client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    assert "has not been run" in pulsar_admin(standalone, "topics", "compaction-status", topic)
    for version in range(3):
        producer.send(f"v{version}".encode(), partition_key="k")
    assert pulsar_admin(standalone, "topics", "compact", topic).strip() == (
        f"Topic compaction requested for {topic}")
    assert pulsar_admin(standalone, "topics", "compaction-status", "-w", topic).strip() == (
        "Compaction was a success")
    assert read_compacted(client, topic) == {"k": b"v2"}

    namespace = f"public/cli-{uuid.uuid4().hex[:8]}"
    pulsar_admin(standalone, "namespaces", "create", namespace)
    pulsar_admin(standalone, "namespaces", "set-compaction-threshold", "-t", "10M", namespace)
    assert pulsar_admin(standalone, "namespaces", "get-compaction-threshold",
                        namespace).strip() == str(10 * 1024 * 1024)
    pulsar_admin(standalone, "namespaces", "remove-compaction-threshold", namespace)
    assert pulsar_admin(standalone, "namespaces", "get-compaction-threshold",
                        namespace).strip() in ("", "null")


def test_compacting_a_partitioned_topic_compacts_each_partition(standalone, client, topic):
    request = urllib.request.Request(standalone.web_url + topic_path(topic) + "/partitions",
                                     data=b"2", method="PUT",
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()
    producer = client.create_producer(topic, batching_enabled=False)
    for version in range(3):
        for key in range(6):
            producer.send(f"{key}-v{version}".encode(), partition_key=f"k{key}")
    admin(standalone, "PUT", topic_path(topic) + "/compaction")
    for index in range(2):
        partition = f"{topic}-partition-{index}"
        deadline = time.monotonic() + 30
        while admin(standalone, "GET", topic_path(partition) + "/compaction")["status"] != (
                "SUCCESS"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
    assert read_compacted(client, topic) == {f"k{key}": f"{key}-v2".encode()
                                             for key in range(6)}


# On a standalone of their own: automatic compaction, and SIGKILL during a compaction.


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.StandaloneProcess]:
    process = broker_testing.StandaloneProcess(
        tmp_path_factory.mktemp("compaction") / "data",
        # journalSyncData stays on: the test SIGKILLs the standalone.
        {"brokerServiceCompactionMonitorIntervalInSeconds": "1"})
    process.start()
    yield process
    process.stop()


def put_json(node: broker_testing.StandaloneProcess, path: str, body: Any) -> None:
    request = urllib.request.Request(node.web_url + path, data=json.dumps(body).encode(),
                                     method="PUT", headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()


def wait_for(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


@pytest.mark.slow
def test_topics_past_the_namespace_compaction_threshold_are_compacted(node):
    namespace = f"public/auto-{uuid.uuid4().hex[:8]}"
    put_json(node, f"/admin/v2/namespaces/{namespace}", {})
    put_json(node, f"/admin/v2/namespaces/{namespace}/compactionThreshold", 2000)
    assert admin(node, "GET", f"/admin/v2/namespaces/{namespace}/compactionThreshold") == 2000
    topic = f"persistent://{namespace}/table"
    client = pulsar.Client(node.service_url)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        for version in range(10):
            for key in range(5):
                producer.send(f"{key}-v{version}-".encode() * 10, partition_key=f"k{key}")
        wait_for(lambda: admin(node, "GET", topic_path(topic) + "/compaction")["status"]
                 == "SUCCESS", 30, "the automatic compaction")
        assert read_compacted(client, topic) == {
            f"k{key}": f"{key}-v9-".encode() * 10 for key in range(5)}
    finally:
        client.close()


@pytest.mark.slow
def test_a_compaction_killed_midway_leaves_the_previous_view_in_force(node):
    topic = f"persistent://public/default/killed-{uuid.uuid4().hex[:8]}"
    expected: dict[str, bytes] = {}
    client = pulsar.Client(node.service_url)
    try:
        producer = client.create_producer(topic, batching_enabled=True,
                                          batching_max_messages=500,
                                          batching_max_publish_delay_ms=20,
                                          block_if_queue_full=True)
        failures: list[Any] = []

        def sent(result: Any, _message_id: Any) -> None:
            if result != pulsar.Result.Ok:
                failures.append(result)

        def send(key: str, value: bytes) -> None:
            producer.send_async(value, sent, partition_key=key)
            if value:
                expected[key] = value
            else:
                expected.pop(key, None)

        for version in range(2):
            for key in range(2000):
                send(f"k{key}", f"{key}-a{version}".encode())
        producer.flush()
        assert compact(node, topic)["status"] == "SUCCESS"
        first_ledger = admin(node, "GET", topic_path(topic) + "/internalStats")[
            "cursors"]["__compaction"]["properties"]["CompactedTopicLedger"]
        # Enough after the horizon that the second compaction takes a while.
        for version in range(60):
            for key in range(0, 2000, 2):
                send(f"k{key}", f"{key}-b{version}".encode())
        for key in range(1, 2000, 10):
            send(f"k{key}", b"")
        producer.flush()
        assert failures == []
    finally:
        client.close()

    admin(node, "PUT", topic_path(topic) + "/compaction")
    node.kill()
    node.start()

    internal = admin(node, "GET", topic_path(topic) + "/internalStats")
    assert internal["cursors"]["__compaction"]["properties"]["CompactedTopicLedger"] == first_ledger
    client = pulsar.Client(node.service_url)
    try:
        assert read_compacted(client, topic) == expected
        assert compact(node, topic)["status"] == "SUCCESS"
        assert read_compacted(client, topic) == expected
    finally:
        client.close()
