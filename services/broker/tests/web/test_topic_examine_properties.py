"""Topic admin routes beyond the basics: examine a message, find a message id by time,
terminate every partition, create missed partitions, and topic properties."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pulsar

if TYPE_CHECKING:
    from conftest import Http

NS = "/admin/v2/persistent/public/default"


def _publish(client: pulsar.Client, topic: str, count: int) -> list[pulsar.MessageId]:
    producer = client.create_producer(f"persistent://public/default/{topic}",
                                      batching_enabled=False)
    ids = [producer.send(f"m{i}".encode(), properties={"i": str(i)}) for i in range(count)]
    producer.close()
    return ids


def _id_text(message_id: pulsar.MessageId) -> str:
    return f"{message_id.ledger_id()}:{message_id.entry_id()}"


def test_examine_counts_from_the_newest_or_the_oldest_message(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"examine-{unique}"
    ids = _publish(client, topic, 4)
    newest = http.get(f"{NS}/{topic}/examinemessage")
    assert newest.status == 200
    assert (newest.body, newest.headers["X-Pulsar-Message-ID"]) == (b"m3", _id_text(ids[3]))
    assert newest.headers["X-Pulsar-PROPERTY-i"] == "3"
    second = http.get(f"{NS}/{topic}/examinemessage?initialPosition=earliest&messagePosition=2")
    assert (second.body, second.headers["X-Pulsar-Message-ID"]) == (b"m1", _id_text(ids[1]))
    third_newest = http.get(f"{NS}/{topic}/examinemessage?initialPosition=latest&messagePosition=3")
    assert third_newest.body == b"m1"
    assert http.get(f"{NS}/{topic}/examinemessage?messagePosition=5").status == 404


def test_examine_refuses_an_empty_a_missing_and_a_partitioned_topic(
        http: Http, unique: str) -> None:
    assert http.put(f"{NS}/empty-{unique}").status == 204
    empty = http.get(f"{NS}/empty-{unique}/examinemessage")
    assert (empty.status, empty.reason) == (
        412, "Could not examine messages due to the total message is zero")
    assert http.get(f"{NS}/missing-{unique}/examinemessage").status == 404
    assert http.put(f"{NS}/parted-{unique}/partitions", 2).status == 204
    parted = http.get(f"{NS}/parted-{unique}/examinemessage")
    assert parted.status == 405
    assert parted.reason.startswith("Examine messages on a partitioned topic is not allowed")


def test_message_id_by_timestamp_is_the_first_published_at_or_after_it(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"by-time-{unique}"
    first = _publish(client, topic, 2)
    # Publish times are in milliseconds: the next batch is published strictly later.
    between = int(time.time() * 1000) + 1
    deadline = time.monotonic() + 5
    while int(time.time() * 1000) <= between and time.monotonic() < deadline:
        time.sleep(0.001)
    later = _publish(client, topic, 2)
    found = http.get(f"{NS}/{topic}/messageid/{between}")
    assert found.status == 200
    assert found.json() == {"ledgerId": later[0].ledger_id(), "entryId": later[0].entry_id(),
                            "partitionIndex": -1}
    oldest = http.get(f"{NS}/{topic}/messageid/0").json()
    assert (oldest["ledgerId"], oldest["entryId"]) == (first[0].ledger_id(), first[0].entry_id())
    # Every message is older: the position the next one takes, as Apache answers.
    future = http.get(f"{NS}/{topic}/messageid/{int(time.time() * 1000) + 60_000}").json()
    assert (future["ledgerId"], future["entryId"]) == (later[1].ledger_id(),
                                                      later[1].entry_id() + 1)
    assert http.get(f"{NS}/missing-{unique}/messageid/0").status == 404


def test_partitioned_terminate_ends_every_partition(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"ends-{unique}"
    assert http.put(f"{NS}/{topic}/partitions", 2).status == 204
    producer = client.create_producer(f"persistent://public/default/{topic}",
                                      batching_enabled=False)
    sent = producer.send(b"only")
    producer.close()
    reply = http.post(f"{NS}/{topic}/terminate/partitions")
    assert reply.status == 200
    ends = reply.json()
    assert sorted(ends) == ["0", "1"]
    written = ends[str(sent.partition())]
    assert (written["ledgerId"], written["entryId"]) == (sent.ledger_id(), sent.entry_id())
    for index in (0, 1):
        stats = http.get(f"{NS}/{topic}-partition-{index}/internalStats").json()
        assert stats["state"] == "Terminated"
    single = http.put(f"{NS}/single-{unique}")
    assert single.status == 204
    refused = http.post(f"{NS}/single-{unique}/terminate/partitions")
    assert (refused.status, refused.reason) == (
        405, ("Termination of a non-partitioned topic is not allowed using partitioned-terminate, "
              "please use terminate commands."))


def test_create_missed_partitions_creates_the_partitions_never_used(
        http: Http, unique: str) -> None:
    topic = f"missed-{unique}"
    assert http.put(f"{NS}/{topic}/partitions", 3).status == 204
    assert http.get(f"{NS}/{topic}-partition-0/internalStats").status == 404
    assert http.post(f"{NS}/{topic}/createMissedPartitions").status == 204
    for index in range(3):
        assert http.get(f"{NS}/{topic}-partition-{index}/internalStats").status == 200
    missing = http.post(f"{NS}/missing-{unique}/createMissedPartitions")
    assert (missing.status, missing.reason) == (
        404, f"Topic persistent://public/default/missing-{unique} does not exist")


def test_topic_properties_are_updated_removed_and_kept_across_an_unload(
        http: Http, unique: str) -> None:
    path = f"{NS}/props-{unique}"
    assert http.put(path).status == 204
    assert http.get(f"{path}/properties").json() == {}
    assert http.put(f"{path}/properties", {"a": "1", "b": "2"}).status == 204
    assert http.put(f"{path}/properties", {"b": "two", "c": 3}).status == 204
    assert http.get(f"{path}/properties").json() == {"a": "1", "b": "two", "c": "3"}
    assert http.put(f"{path}/unload").status == 204
    assert http.get(f"{path}/properties").json() == {"a": "1", "b": "two", "c": "3"}
    assert http.delete(f"{path}/properties?key=a").status == 204
    assert http.delete(f"{path}/properties?key=never-set").status == 204
    assert http.get(f"{path}/properties").json() == {"b": "two", "c": "3"}
    assert http.put(f"{path}/properties", ["not", "a", "map"]).status == 400
    assert http.get(f"{NS}/missing-{unique}/properties").status == 404


def test_properties_go_with_the_topic_and_a_partitioned_topic_has_its_own(
        http: Http, unique: str) -> None:
    path = f"{NS}/gone-{unique}"
    assert http.put(path).status == 204
    assert http.put(f"{path}/properties", {"k": "v"}).status == 204
    assert http.delete(path).status == 204
    assert http.put(path).status == 204
    assert http.get(f"{path}/properties").json() == {}
    parted = f"{NS}/parted-props-{unique}"
    assert http.put(f"{parted}/partitions", 2).status == 204
    assert http.put(f"{parted}/properties", {"team": "blue"}).status == 204
    assert http.get(f"{parted}/properties").json() == {"team": "blue"}
    assert http.delete(f"{parted}/partitions").status == 204
    assert http.put(f"{parted}/partitions", 2).status == 204
    assert http.get(f"{parted}/properties").json() == {}


def test_subscription_properties_are_replaced_and_go_with_the_subscription(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"sub-props-{unique}"
    sub = f"{NS}/{topic}/subscription/s"
    assert http.put(f"{NS}/{topic}").status == 204
    created = http.put(sub, {"ledgerId": -1, "entryId": -1, "properties": {"owner": "a"}})
    assert created.status == 204
    assert http.get(f"{sub}/properties").json() == {"owner": "a"}
    assert http.put(f"{sub}/properties", {"x": "1", "y": "2"}).status == 204
    assert http.get(f"{sub}/properties").json() == {"x": "1", "y": "2"}
    assert http.put(f"{sub}/properties", {}).status == 204
    assert http.get(f"{sub}/properties").json() == {}
    assert http.put(f"{sub}/properties", {"x": "1"}).status == 204
    # A consumer unsubscribing deletes the cursor: a new subscription of that name has none.
    consumer = client.subscribe(f"persistent://public/default/{topic}", "s")
    consumer.unsubscribe()
    client.subscribe(f"persistent://public/default/{topic}", "s").close()
    assert http.get(f"{sub}/properties").json() == {}
    missing = http.get(f"{NS}/{topic}/subscription/nobody/properties")
    assert (missing.status, missing.reason) == (404, "Subscription not found")


def test_partitioned_subscription_properties_cover_every_partition(
        http: Http, unique: str) -> None:
    topic = f"sub-props-parted-{unique}"
    assert http.put(f"{NS}/{topic}/partitions", 2).status == 204
    sub = f"{NS}/{topic}/subscription/s"
    assert http.put(sub).status == 204
    assert http.put(f"{sub}/properties", {"k": "v"}).status == 204
    assert http.get(f"{sub}/properties").json() == {"k": "v"}
    for index in (0, 1):
        partition_sub = f"{NS}/{topic}-partition-{index}/subscription/s/properties"
        assert http.get(partition_sub).json() == {"k": "v"}
    assert http.delete(sub).status == 204
    assert http.put(sub).status == 204
    assert http.get(f"{sub}/properties").json() == {}


def test_properties_given_when_creating_a_topic(http: Http, unique: str) -> None:
    single = f"{NS}/born-{unique}"
    assert http.put(single, {"owner": "team-a"}).status == 204
    assert http.get(f"{single}/properties").json() == {"owner": "team-a"}
    parted = f"{NS}/born-parted-{unique}"
    assert http.put(f"{parted}/partitions", {"partitions": 2, "properties": {"k": "v"}}).status == 204
    assert http.get(f"{parted}/partitions").json()["partitions"] == 2
    assert http.get(f"{parted}/properties").json() == {"k": "v"}
