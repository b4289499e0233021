"""Producer access modes with the official client: Exclusive refuses a second producer,
ExclusiveWithFencing takes over the topic, WaitForExclusive waits for its turn; the topic
epoch moves forward with each exclusive producer and fences stale ones."""

from __future__ import annotations

import threading
import urllib.request
from typing import Any

import pulsar
import pytest
from pulsar_common.wire import pulsar_api_pb2 as pb

Mode = pulsar.ProducerAccessMode


def test_a_second_exclusive_producer_is_fenced_and_a_shared_one_is_busy(client, topic):
    first = client.create_producer(topic, access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic)
    first.send(b"still mine")
    first.close()
    second = client.create_producer(topic, access_mode=Mode.Exclusive)
    second.send(b"now mine")
    second.close()


def test_an_exclusive_producer_is_refused_next_to_shared_ones(client, topic):
    shared = client.create_producer(topic)
    with pytest.raises(pulsar.ProducerFenced):
        client.create_producer(topic, access_mode=Mode.Exclusive)
    also_shared = client.create_producer(topic)
    also_shared.close()
    shared.close()


def test_exclusive_with_fencing_closes_the_producer_in_place(client, topic):
    consumer = client.subscribe(topic, "s", initial_position=pulsar.InitialPosition.Earliest)
    old = client.create_producer(topic, access_mode=Mode.Exclusive, send_timeout_millis=10_000,
                                 batching_enabled=False)
    old.send(b"before")
    new = client.create_producer(topic, access_mode=Mode.ExclusiveWithFencing,
                                 batching_enabled=False)
    new.send(b"after")
    with pytest.raises(pulsar.ProducerFenced):
        old.send(b"from the fenced one")
    received = [consumer.receive(timeout_millis=10_000).data() for _ in range(2)]
    assert received == [b"before", b"after"]
    with pytest.raises(pulsar.Timeout):
        consumer.receive(timeout_millis=300)
    new.close()


def test_wait_for_exclusive_waits_until_the_topic_is_free(client, topic):
    holder = client.create_producer(topic, access_mode=Mode.Exclusive)
    created = threading.Event()
    waiting: dict[str, Any] = {}

    def create_waiting() -> None:
        waiting["producer"] = client.create_producer(topic, access_mode=Mode.WaitForExclusive)
        created.set()

    thread = threading.Thread(target=create_waiting, daemon=True)
    thread.start()
    # Still waiting while the holder is there.
    assert not created.wait(timeout=1.0)
    holder.close()
    assert created.wait(timeout=15.0)
    waiting["producer"].send(b"my turn")
    waiting["producer"].close()
    thread.join(timeout=5)


def _producer(connection: Any, topic: str, producer_id: int, mode: int,
              epoch: int | None = None) -> Any:
    command = pb.BaseCommand(type=pb.BaseCommand.PRODUCER)
    command.producer.topic = topic
    command.producer.producer_id = producer_id
    command.producer.request_id = connection.next_request_id()
    command.producer.producer_access_mode = mode
    if epoch is not None:
        command.producer.topic_epoch = epoch
    return connection.request(command).command


def _close(connection: Any, producer_id: int) -> None:
    command = pb.BaseCommand(type=pb.BaseCommand.CLOSE_PRODUCER)
    command.close_producer.producer_id = producer_id
    command.close_producer.request_id = connection.next_request_id()
    assert connection.request(command).command.type == pb.BaseCommand.SUCCESS


def test_each_exclusive_producer_moves_the_topic_epoch_and_stale_epochs_are_fenced(
        raw_connection, standalone, topic):
    connection = raw_connection()
    first = _producer(connection, topic, 1, pb.Exclusive)
    assert first.producer_success.topic_epoch == 0
    _close(connection, 1)
    second = _producer(connection, topic, 2, pb.Exclusive)
    assert second.producer_success.topic_epoch == 1
    _close(connection, 2)
    # The epoch is stored with the topic: it survives an unload.
    path = topic.removeprefix("persistent://")
    urllib.request.urlopen(urllib.request.Request(
        f"{standalone.web_url}/admin/v2/persistent/{path}/unload", method="PUT"), timeout=10)
    # A producer reconnecting with the epoch it had before the topic moved on.
    stale = _producer(connection, topic, 3, pb.Exclusive, epoch=0)
    assert stale.type == pb.BaseCommand.ERROR
    assert stale.error.error == pb.ProducerFenced
    # Reconnecting with the current epoch keeps it.
    current = _producer(connection, topic, 4, pb.ExclusiveWithFencing, epoch=1)
    assert current.producer_success.topic_epoch == 1


def test_wait_for_exclusive_is_told_to_wait_then_gets_a_second_producer_success(
        raw_connection, topic):
    holder, waiter = raw_connection(), raw_connection()
    assert _producer(holder, topic, 1, pb.Exclusive).type == pb.BaseCommand.PRODUCER_SUCCESS
    queued = _producer(waiter, topic, 1, pb.WaitForExclusive)
    assert queued.type == pb.BaseCommand.PRODUCER_SUCCESS
    assert queued.producer_success.producer_ready is False
    _close(holder, 1)
    ready = waiter.read().command
    assert ready.type == pb.BaseCommand.PRODUCER_SUCCESS
    assert ready.producer_success.producer_ready is True
    assert ready.producer_success.request_id == queued.producer_success.request_id
    assert ready.producer_success.topic_epoch == 1


def test_a_waiting_producer_that_closes_gives_up_its_place(raw_connection, topic):
    holder, quitter, patient = raw_connection(), raw_connection(), raw_connection()
    _producer(holder, topic, 1, pb.Exclusive)
    assert _producer(quitter, topic, 1, pb.WaitForExclusive).producer_success.producer_ready is False
    assert _producer(patient, topic, 1, pb.WaitForExclusive).producer_success.producer_ready is False
    _close(quitter, 1)
    _close(holder, 1)
    ready = patient.read().command
    assert ready.type == pb.BaseCommand.PRODUCER_SUCCESS and ready.producer_success.producer_ready
