"""Partitioned topics with each routing mode, and regex subscriptions."""

from __future__ import annotations

import re
import time
import urllib.request
import uuid

import pulsar
import pytest

from pulsar_broker.testing import receive_all


def _create_partitioned(standalone, topic: str, partitions: int) -> None:
    path = topic.replace("persistent://", "")
    request = urllib.request.Request(
        f"{standalone.web_url}/admin/v2/persistent/{path}/partitions",
        data=str(partitions).encode(), method="PUT",
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status in (200, 204)


def test_received_message_ids_name_their_partition(client, standalone, topic):
    """Code that groups by msg.message_id().partition() sees the partition each message
    came from, as in the producer's receipt (the MESSAGE frame carries it)."""
    _create_partitioned(standalone, topic, 3)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    sent = {b"%d" % i: producer.send(b"%d" % i).partition() for i in range(12)}
    assert set(sent.values()) == {0, 1, 2}
    for msg in receive_all(consumer, 12):
        assert msg.message_id().partition() == sent[msg.data()]
        assert msg.topic_name().endswith(f"-partition-{sent[msg.data()]}")


@pytest.mark.parametrize("mode", ["RoundRobinDistribution", "UseSinglePartition"])
def test_partitioned_topic_with_routing_mode(client, standalone, topic, mode):
    _create_partitioned(standalone, topic, 3)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(
        topic, message_routing_mode=getattr(pulsar.PartitionsRoutingMode, mode))
    for i in range(30):
        producer.send(b"%d" % i)
    got = receive_all(consumer, 30)
    assert sorted(m.data() for m in got) == sorted(b"%d" % i for i in range(30))
    partitions = {m.topic_name() for m in got}
    if mode == "UseSinglePartition":
        assert len(partitions) == 1
    else:
        assert len(partitions) == 3


def test_partitioned_topic_with_custom_router(client, standalone, topic):
    _create_partitioned(standalone, topic, 4)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(
        topic, message_routing_mode=pulsar.PartitionsRoutingMode.CustomPartition,
        message_router=lambda msg, n: int(msg.data()) % n)
    for i in range(8):
        producer.send(b"%d" % i)
    got = receive_all(consumer, 8)
    for msg in got:
        assert msg.topic_name().endswith(f"-partition-{int(msg.data()) % 4}")


def test_keyed_messages_on_a_partitioned_topic_stay_on_one_partition(client, standalone, topic):
    _create_partitioned(standalone, topic, 4)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for i in range(12):
        producer.send(b"%d" % i, partition_key="same-key")
    got = receive_all(consumer, 12)
    assert len({m.topic_name() for m in got}) == 1
    assert [m.data() for m in got] == [b"%d" % i for i in range(12)]


def test_regex_subscription_reads_matching_topics(client):
    prefix = f"regex-{uuid.uuid4().hex[:8]}"
    topics = [f"persistent://public/default/{prefix}-{i}" for i in range(3)]
    for t in topics:
        client.create_producer(t).close()
    consumer = client.subscribe(re.compile(f"persistent://public/default/{prefix}-.*"), "sub",
                                initial_position=pulsar.InitialPosition.Earliest)
    for i, t in enumerate(topics):
        client.create_producer(t).send(b"%d" % i)
    got = receive_all(consumer, 3, timeout_ms=20_000)
    assert sorted(m.data() for m in got) == [b"0", b"1", b"2"]


def test_subscribing_to_a_missing_topic_with_auto_creation_off_fails(standalone, tmp_path):
    from pulsar_broker.testing import StandaloneProcess

    strict = StandaloneProcess(tmp_path / "data", {"allowAutoTopicCreation": "false",
                                                    "journalSyncData": "false"}).start()
    try:
        c = pulsar.Client(strict.service_url, operation_timeout_seconds=5)
        with pytest.raises(pulsar.TopicNotFound):
            c.create_producer("persistent://public/default/does-not-exist")
        c.close()
    finally:
        strict.stop()
