"""Batch-index acknowledgements with the official client (acknowledgmentAtBatchIndexLevelEnabled,
on by default as in Apache Pulsar 4.1): single messages of a batch acknowledged by a consumer
with `batch_index_ack_enabled` are not delivered again, neither on redelivery, nor to the next
consumer, nor after a SIGKILL of the broker."""

from __future__ import annotations

import urllib.request

import pulsar
from pulsar_broker.testing import (
    StandaloneProcess,
    close_after_broker_death,
    get_json,
    nothing_more,
    receive_all,
)
from pulsar_common import testing

BATCH = 10


def produce_one_batch(client: pulsar.Client, topic: str) -> None:
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=BATCH,
                                      batching_max_publish_delay_ms=60_000)
    for i in range(BATCH):
        producer.send_async(b"%d" % i, None)
    producer.flush()
    producer.close()


def receive_batch_and_ack_the_even_ones(consumer: pulsar.Consumer) -> None:
    got = receive_all(consumer, BATCH, ack=False)
    entries = {(m.message_id().ledger_id(), m.message_id().entry_id()) for m in got}
    assert len(entries) == 1, "the producer was to send one batch"
    for msg in got:
        if int(msg.data()) % 2 == 0:
            consumer.acknowledge(msg)


def odd() -> list[bytes]:
    return [b"%d" % i for i in range(1, BATCH, 2)]


def test_a_new_consumer_gets_only_the_unacknowledged_messages_of_a_batch(client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                batch_index_ack_enabled=True)
    produce_one_batch(client, topic)
    receive_batch_and_ack_the_even_ones(consumer)
    consumer.close()
    again = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                             batch_index_ack_enabled=True)
    assert [m.data() for m in receive_all(again, len(odd()))] == odd()
    assert nothing_more(again)


def test_redelivery_of_a_partly_acknowledged_batch_skips_the_acknowledged_messages(
        standalone, client, topic):
    consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
    produce_one_batch(client, topic)
    receive_batch_and_ack_the_even_ones(consumer)
    # The client sends its acks grouped, after a while: redeliver once the broker has them.
    stats_url = f"{standalone.web_url}/admin/v2/{topic.replace('://', '/')}/stats"
    testing.wait_until(
        lambda: get_json(stats_url)["subscriptions"]["sub"]["unackedMessages"] == len(odd()),
        30, "the batch-index acks at the broker")
    consumer.redeliver_unacknowledged_messages()
    assert [m.data() for m in receive_all(consumer, len(odd()), ack=False)] == odd()
    assert nothing_more(consumer)


def test_batch_index_acks_outlive_a_sigkill_of_the_broker(tmp_path):
    node = StandaloneProcess(tmp_path / "data", {"journalSyncData": "true"}).start()
    topic = "persistent://public/default/batch-index-acks-restart"
    try:
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
        produce_one_batch(client, topic)
        receive_batch_and_ack_the_even_ones(consumer)
        consumer.close()
        # Unloading closes the managed ledger, which persists the cursor: from here on the
        # acknowledgements are stored, and only the SIGKILL follows.
        unload = urllib.request.Request(
            f"{node.web_url}/admin/v2/persistent/public/default/batch-index-acks-restart/unload",
            method="PUT")
        urllib.request.urlopen(unload, timeout=30).close()
        node.kill()
        close_after_broker_death(client)

        node.start()
        client = pulsar.Client(node.service_url, operation_timeout_seconds=30)
        consumer = client.subscribe(topic, "sub", batch_index_ack_enabled=True)
        assert [m.data() for m in receive_all(consumer, len(odd()))] == odd()
        assert nothing_more(consumer)
        client.close()
    finally:
        node.stop()


def test_a_negatively_acknowledged_message_comes_back_alone_not_its_whole_batch(
        standalone, client, topic):
    consumer = client.subscribe(topic, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                batch_index_ack_enabled=True,
                                negative_ack_redelivery_delay_ms=100)
    produce_one_batch(client, topic)
    got = receive_all(consumer, BATCH, ack=False)
    for msg in got:
        if msg.data() != b"3":
            consumer.acknowledge(msg)
    stats_url = f"{standalone.web_url}/admin/v2/{topic.replace('://', '/')}/stats"
    testing.wait_until(
        lambda: get_json(stats_url)["subscriptions"]["sub"]["unackedMessages"] == 1,
        30, "the batch-index acks at the broker")
    consumer.negative_acknowledge(next(m for m in got if m.data() == b"3"))
    again = consumer.receive(timeout_millis=10_000)
    assert again.data() == b"3" and again.redelivery_count() == 1
    consumer.acknowledge(again)
    assert nothing_more(consumer)
