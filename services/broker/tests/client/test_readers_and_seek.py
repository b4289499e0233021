"""Readers from earliest, latest and a given id; seek by id and time; last message id."""

from __future__ import annotations

import time

import pulsar

from pulsar_broker.testing import nothing_more


def _produce(client, topic, count, batching=False):
    producer = client.create_producer(topic, batching_enabled=batching,
                                      batching_max_publish_delay_ms=5)
    ids = []
    for i in range(count):
        ids.append(producer.send(b"%d" % i))
    return producer, ids


def test_reader_from_earliest_reads_everything(client, topic):
    _produce(client, topic, 10)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [reader.read_next(10_000).data() for _ in range(10)] == [b"%d" % i for i in range(10)]


def test_reader_from_latest_sees_only_new_messages(client, topic):
    producer, _ = _produce(client, topic, 5)
    reader = client.create_reader(topic, pulsar.MessageId.latest)
    producer.send(b"new")
    assert reader.read_next(10_000).data() == b"new"


def test_reader_from_an_id_starts_after_it(client, topic):
    _, ids = _produce(client, topic, 10)
    reader = client.create_reader(topic, ids[3])
    assert reader.read_next(10_000).data() == b"4"


def test_reader_from_an_id_inclusive_starts_at_it(client, topic):
    _, ids = _produce(client, topic, 10)
    reader = client.create_reader(topic, ids[3], start_message_id_inclusive=True)
    assert reader.read_next(10_000).data() == b"3"


def test_has_message_available_tracks_the_end_of_the_topic(client, topic):
    producer, _ = _produce(client, topic, 3)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    for _ in range(3):
        assert reader.has_message_available()
        reader.read_next(10_000)
    assert not reader.has_message_available()
    producer.send(b"more")
    assert reader.has_message_available()


def test_has_message_available_on_an_empty_topic_is_false(client, topic):
    client.create_producer(topic)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert not reader.has_message_available()


def test_seek_to_a_message_id_replays_what_follows_it(client, topic):
    # The broker resets the cursor to the id itself; the official client then drops
    # the id's own message unless the consumer was configured with an inclusive start.
    consumer = client.subscribe(topic, "sub")
    _, ids = _produce(client, topic, 10)
    for _ in range(10):
        consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    consumer.seek(ids[4])
    assert [consumer.receive(timeout_millis=10_000).data() for _ in range(5)] == [
        b"%d" % i for i in range(5, 10)]
    assert nothing_more(consumer)


def test_seek_to_earliest_replays_everything(client, topic):
    consumer = client.subscribe(topic, "sub")
    _produce(client, topic, 5)
    for _ in range(5):
        consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    consumer.seek(pulsar.MessageId.earliest)
    assert [consumer.receive(timeout_millis=10_000).data() for _ in range(5)] == [
        b"%d" % i for i in range(5)]


def test_seek_by_publish_time(client, topic):
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    for i in range(5):
        producer.send(b"old-%d" % i)
    time.sleep(0.05)  # Publish times are milliseconds: make the boundary unambiguous.
    boundary_ms = int(time.time() * 1000)
    time.sleep(0.05)
    for i in range(5):
        producer.send(b"new-%d" % i)
    for _ in range(10):
        consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    consumer.seek(boundary_ms)
    assert [consumer.receive(timeout_millis=10_000).data() for _ in range(5)] == [
        b"new-%d" % i for i in range(5)]
    assert nothing_more(consumer)


def test_last_message_id_is_the_last_sent(client, topic):
    consumer = client.subscribe(topic, "sub")
    _, ids = _produce(client, topic, 4)
    last = consumer.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (ids[-1].ledger_id(), ids[-1].entry_id())


def test_reader_reads_batched_messages_from_inside_a_batch(client, topic):
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=50,
                                      batching_max_messages=10)
    ids = []
    for i in range(10):
        producer.send_async(b"%d" % i, lambda res, mid: ids.append(mid))
    producer.flush()
    ids.sort(key=lambda m: m.batch_index())
    reader = client.create_reader(topic, ids[4])
    assert reader.read_next(10_000).data() == b"5"
