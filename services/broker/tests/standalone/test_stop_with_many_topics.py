"""A SIGTERM stop closes every loaded topic (the broker closes them several at a time):
each subscription's acknowledged position is flushed and comes back after a restart."""

from __future__ import annotations

import os
import signal

import pulsar
from pulsar_common import testing

from pulsar_broker.service import broker_service
from pulsar_broker.testing import StandaloneProcess, get_json, receive_all

#: More topics than the broker closes at once, so some wait for a free slot.
TOPICS = broker_service.TOPICS_CLOSED_AT_ONCE + 16
MESSAGES = 3


def _backlog(node: StandaloneProcess, topic: str) -> int:
    stats = get_json(f"{node.web_url}/admin/v2/persistent/public/default/{topic}/stats")
    return int(stats["subscriptions"]["stop"]["msgBacklog"])


def test_sigterm_with_many_topics_keeps_every_subscriptions_acknowledged_position(tmp_path):
    node = StandaloneProcess(tmp_path / "data", {"journalSyncData": "false"}).start()
    topics = [f"stop-{i}" for i in range(TOPICS)]
    acked = {topic: i % MESSAGES for i, topic in enumerate(topics)}
    try:
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        for topic in topics:
            consumer = client.subscribe(topic, "stop", receiver_queue_size=MESSAGES)
            producer = client.create_producer(topic, batching_enabled=False)
            for n in range(MESSAGES):
                producer.send(f"{topic}/{n}".encode())
            receive_all(consumer, acked[topic])
        # The acknowledgements reached the broker (the clients group them); they are
        # only in the cursors' memory when the stop begins, with the consumers connected.
        for topic in topics:
            testing.wait_until(lambda t=topic: _backlog(node, t) == MESSAGES - acked[t],
                               10, f"acks of {topic}")
        os.kill(node.pid, signal.SIGTERM)
        assert node.process is not None and node.process.wait(60) == 0
        client.close()

        node.start()
        assert {topic: _backlog(node, topic) for topic in topics} == {
            topic: MESSAGES - acked[topic] for topic in topics}
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        for topic in topics[:MESSAGES]:
            consumer = client.subscribe(topic, "stop")
            rest = receive_all(consumer, MESSAGES - acked[topic])
            assert [m.data() for m in rest] == [
                f"{topic}/{n}".encode() for n in range(acked[topic], MESSAGES)]
        client.close()
    finally:
        node.stop()
