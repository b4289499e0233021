"""Delayed messages outlive the broker, and a broker that disables them delivers at once."""

from __future__ import annotations

import time
from datetime import timedelta

import pulsar
from pulsar_broker.testing import StandaloneProcess, close_after_broker_death

from .conftest import TICK_MS

SHARED = pulsar.ConsumerType.Shared


def drain(consumer: pulsar.Consumer, quiet_ms: int = 1000) -> list[bytes]:
    """What else arrives until nothing has for quiet_ms, acknowledged."""
    seen = []
    while True:
        try:
            message = consumer.receive(timeout_millis=quiet_ms)
        except pulsar.Timeout:
            return seen
        seen.append(message.data())
        consumer.acknowledge(message)


def test_a_delayed_message_survives_sigkill_and_restart(tmp_path):
    node = StandaloneProcess(tmp_path / "data", {
        "journalSyncData": "true", "delayedDeliveryTickTimeMillis": str(TICK_MS)}).start()
    topic = "persistent://public/default/delayed-restart"
    try:
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
        producer = client.create_producer(topic)
        deliver_at = time.time_ns() // 1_000_000 + 3000
        producer.send(b"late", deliver_at=deliver_at)
        producer.send(b"plain")
        consumer.acknowledge(consumer.receive(timeout_millis=10_000))
        node.kill()
        close_after_broker_death(client)

        node.start()
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
        # The acknowledgement of "plain" may not have been stored before the kill; it may
        # come again (at least once), before or after "late" (when the restart took longer
        # than the delay), but "late" must come once, and not before its time.
        msg = consumer.receive(timeout_millis=30_000)
        while msg.data() == b"plain":
            consumer.acknowledge(msg)
            msg = consumer.receive(timeout_millis=30_000)
        assert msg.data() == b"late"
        assert time.time_ns() // 1_000_000 >= deliver_at - TICK_MS - 20
        consumer.acknowledge(msg)
        assert set(drain(consumer)) <= {b"plain"}
        client.close()
    finally:
        node.kill()


def test_disabled_by_broker_config_delivers_at_once(tmp_path):
    node = StandaloneProcess(tmp_path / "data", {
        "journalSyncData": "false", "delayedDeliveryEnabled": "false"}).start()
    topic = "persistent://public/default/delayed-disabled"
    try:
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        consumer = client.subscribe(topic, "sub", consumer_type=SHARED)
        producer = client.create_producer(topic)
        producer.send(b"late", deliver_after=timedelta(hours=1))
        producer.send(b"plain")
        got = [consumer.receive(timeout_millis=10_000).data() for _ in range(2)]
        assert got == [b"late", b"plain"]
        client.close()
    finally:
        node.stop()
