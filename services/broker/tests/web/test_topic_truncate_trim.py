"""`DELETE .../{topic}/truncate` and `POST .../{topic}/trim` against a real standalone,
with the official client: truncate clears every backlog and deletes every ledger but the
current one while producers and consumers stay connected; trim deletes consumed ledgers
now. Ledgers hold two entries here, so a few messages make several ledgers."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pulsar
import pytest
from pulsar_broker import testing as broker_testing

NS = "/admin/v2/persistent/public/default"
NON_PERSISTENT_NS = "/admin/v2/non-persistent/public/default"


@pytest.fixture(scope="module")
def standalone(
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[broker_testing.StandaloneProcess]:
    node = broker_testing.StandaloneProcess(tmp_path_factory.mktemp("truncate") / "data", {
        "journalSyncData": "false",
        "managedLedgerMaxEntriesPerLedger": "2",
        "managedLedgerMinLedgerRolloverTimeMinutes": "0",
    })
    node.start()
    yield node
    node.stop()


def ledger_count(http: Any, path: str) -> int:
    return len(http.get(f"{path}/internalStats").json()["ledgers"])


def publish(producer: pulsar.Producer, *payloads: bytes) -> None:
    for payload in payloads:
        producer.send(payload)


def receive_until(consumer: pulsar.Consumer, wanted: bytes) -> list[bytes]:
    """Everything received up to and including wanted (older prefetched messages first)."""
    seen: list[bytes] = []
    while not seen or seen[-1] != wanted:
        seen.append(consumer.receive(timeout_millis=10_000).data())
    return seen


def test_truncate_clears_the_backlog_and_keeps_the_clients_working(
        http: Any, client: pulsar.Client) -> None:
    topic = f"persistent://public/default/truncate-{uuid.uuid4().hex[:10]}"
    path = f"{NS}/{topic.rsplit('/', 1)[1]}"
    consumer = client.subscribe(topic, "kept", receiver_queue_size=1)
    client.subscribe(topic, "idle").close()
    producer = client.create_producer(topic, batching_enabled=False)
    publish(producer, *(b"old-%d" % i for i in range(7)))
    assert ledger_count(http, path) == 4

    reply = http.delete(f"{path}/truncate")

    assert reply.status == 204
    stats = http.get(f"{path}/stats").json()
    assert stats["subscriptions"]["kept"]["msgBacklog"] == 0
    assert stats["subscriptions"]["idle"]["msgBacklog"] == 0
    assert ledger_count(http, path) == 1
    publish(producer, b"after")
    received = receive_until(consumer, b"after")
    assert all(payload.startswith(b"old-") for payload in received[:-1])
    assert http.get(f"{path}/stats").json()["subscriptions"]["idle"]["msgBacklog"] == 1
    consumer.close()


def test_truncate_applies_to_every_partition(http: Any, client: pulsar.Client) -> None:
    name = f"ptruncate-{uuid.uuid4().hex[:10]}"
    assert http.put(f"{NS}/{name}/partitions", 2).status == 204
    topic = f"persistent://public/default/{name}"
    client.subscribe(topic, "s").close()
    round_robin = pulsar.PartitionsRoutingMode.RoundRobinDistribution
    producer = client.create_producer(topic, batching_enabled=False,
                                      message_routing_mode=round_robin)
    publish(producer, *(b"%d" % i for i in range(10)))
    before = http.get(f"{NS}/{name}/partitioned-stats").json()
    assert before["subscriptions"]["s"]["msgBacklog"] == 10

    assert http.delete(f"{NS}/{name}/truncate").status == 204

    after = http.get(f"{NS}/{name}/partitioned-stats").json()
    assert after["subscriptions"]["s"]["msgBacklog"] == 0
    for index in range(2):
        assert ledger_count(http, f"{NS}/{name}-partition-{index}") == 1


def test_trim_has_deleted_the_ledgers_nothing_holds_when_it_answers(
        http: Any, client: pulsar.Client) -> None:
    name = f"trim-{uuid.uuid4().hex[:10]}"
    producer = client.create_producer(f"persistent://public/default/{name}",
                                      batching_enabled=False)
    # No subscription and no retention (the standalone's default): nothing holds the
    # closed ledgers. A rollover asks for a trim in the background; trim runs one now and
    # answers once it is done.
    publish(producer, *(b"%d" % i for i in range(5)))

    assert http.post(f"{NS}/{name}/trim").status == 204

    assert ledger_count(http, f"{NS}/{name}") == 1
    publish(producer, b"after")
    assert http.get(f"{NS}/{name}/internalStats").json()["numberOfEntries"] == 2


def test_missing_and_non_persistent_topics_are_answered_as_apache_does(
        http: Any, client: pulsar.Client) -> None:
    missing = f"missing-{uuid.uuid4().hex[:10]}"
    assert http.delete(f"{NS}/{missing}/truncate").status == 404
    assert http.post(f"{NS}/{missing}/trim").status == 404
    reply = http.delete(f"{NON_PERSISTENT_NS}/{missing}/truncate")
    assert (reply.status, reply.reason) == (412, "unsupport truncate")
    assert http.post(f"{NON_PERSISTENT_NS}/{missing}/trim").status == 404
    name = f"np-{uuid.uuid4().hex[:10]}"
    producer = client.create_producer(f"non-persistent://public/default/{name}")
    reply = http.post(f"{NON_PERSISTENT_NS}/{name}/trim")
    assert (reply.status, reply.reason) == (405, "Trim on a non-persistent topic is not allowed")
    producer.close()
