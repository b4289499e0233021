"""Deduplication (brokerDeduplicationEnabled): a producer's resends are stored once,
also across a broker crash."""

from __future__ import annotations

import os
import uuid

import pulsar
import pytest
from pulsar_broker.testing import StandaloneProcess, close_after_broker_death, read_topic


@pytest.fixture
def dedup_node(tmp_path):
    node = StandaloneProcess(tmp_path / "data", {"journalSyncData": "true",
                                                 "brokerDeduplicationEnabled": "true"}).start()
    yield node
    node.stop()


def test_resent_sequence_ids_are_acknowledged_but_stored_once(dedup_node):
    topic = f"persistent://public/default/dedup-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(dedup_node.service_url, operation_timeout_seconds=30)
    producer = client.create_producer(topic, producer_name="p1", batching_enabled=False)
    for i in range(5):
        producer.send(b"m%d" % i, sequence_id=i)
    duplicate = producer.send(b"m2 again", sequence_id=2)
    assert (duplicate.ledger_id(), duplicate.entry_id()) == (-1, -1)
    producer.send(b"m5", sequence_id=5)
    client.close()
    assert read_topic(dedup_node.service_url, topic) == [b"m0", b"m1", b"m2", b"m3", b"m4", b"m5"]


def test_a_chunked_message_is_stored_whole(dedup_node):
    # Every chunk carries the message's sequence id: the chunks after the first are no
    # duplicates (they were once acknowledged and dropped, and the message never arrived).
    topic = f"persistent://public/default/dedup-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(dedup_node.service_url, operation_timeout_seconds=30)
    producer = client.create_producer(topic, producer_name="chunker", chunking_enabled=True,
                                      batching_enabled=False)
    large = os.urandom(12 * 1024 * 1024)  # over the 5 MiB maxMessageSize: three chunks
    for body in (b"before", large, b"after"):
        producer.send(body)
    client.close()
    assert read_topic(dedup_node.service_url, topic) == [b"before", large, b"after"]


def test_a_producer_reconnecting_under_its_name_learns_its_last_sequence_id(dedup_node):
    topic = f"persistent://public/default/dedup-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(dedup_node.service_url, operation_timeout_seconds=30)
    first = client.create_producer(topic, producer_name="p2")
    for i in range(7):
        first.send(b"x")
    first.close()
    again = client.create_producer(topic, producer_name="p2")
    assert again.last_sequence_id() == 6
    client.close()


def test_deduplication_state_survives_sigkill(dedup_node):
    topic = f"persistent://public/default/dedup-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(dedup_node.service_url, operation_timeout_seconds=30)
    producer = client.create_producer(topic, producer_name="p3", batching_enabled=False)
    for i in range(10):
        producer.send(b"m%d" % i, sequence_id=i)
    dedup_node.kill()
    close_after_broker_death(client)
    dedup_node.start()
    client = pulsar.Client(dedup_node.service_url, operation_timeout_seconds=30)
    producer = client.create_producer(topic, producer_name="p3", batching_enabled=False)
    assert producer.last_sequence_id() == 9
    resent = producer.send(b"m7 again", sequence_id=7)
    assert (resent.ledger_id(), resent.entry_id()) == (-1, -1)
    client.close()
    assert read_topic(dedup_node.service_url, topic) == [b"m%d" % i for i in range(10)]
