"""Persistent and partitioned topics: create, list, metadata, stats, last message id, delete."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulsar

if TYPE_CHECKING:
    from conftest import Http

NS = "/admin/v2/persistent/public/default"


def test_non_partitioned_topic_create_list_delete(http: Http, unique: str) -> None:
    path = f"{NS}/plain-{unique}"
    assert http.put(path).status == 204
    conflict = http.put(path)
    assert (conflict.status, conflict.reason) == (409, "This topic already exists")
    assert f"persistent://public/default/plain-{unique}" in http.get(NS).json()
    assert http.get(path + "/partitions").json() == {"partitions": 0}
    assert http.delete(path).status == 204
    missing = http.delete(path)
    assert (missing.status, missing.reason) == (404, "Topic not found")


def test_partitioned_topic_create_update_get_delete(http: Http, unique: str) -> None:
    path = f"{NS}/parts-{unique}/partitions"
    assert http.call("PUT", path, raw=b"3").status == 204
    assert http.put(path, 3).status == 409
    assert http.get(path).json() == {"partitions": 3}
    assert f"persistent://public/default/parts-{unique}" in http.get(NS + "/partitioned").json()
    topics = http.get("/admin/v2/namespaces/public/default/topics").json()
    assert f"persistent://public/default/parts-{unique}-partition-2" in topics
    assert http.post(path, 5).status == 204
    assert http.get(path).json() == {"partitions": 5}
    assert http.post(path, 2).status == 409
    assert http.delete(path).status == 204
    assert http.get(path).json() == {"partitions": 0}
    assert http.delete(path).status == 404


def test_partition_count_must_be_positive(http: Http, unique: str) -> None:
    assert http.put(f"{NS}/zero-{unique}/partitions", 0).status == 406
    assert http.put(f"{NS}/text-{unique}/partitions", {"n": 1}).status == 400


def test_invalid_names_and_unknown_namespaces(http: Http, unique: str) -> None:
    assert http.put(f"/admin/v2/persistent/bad%20tenant/default/t-{unique}").status == 412
    assert http.put(f"/admin/v2/persistent/public/none-{unique}/t").status == 404
    assert http.get(f"/admin/v2/persistent/public/none-{unique}").status == 404
    assert http.get(f"{NS}/never-{unique}/stats").status == 404


def test_stats_internal_stats_and_last_message_id_follow_publishing(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/stats-{unique}"
    client.subscribe(topic, "sub-a").close()
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [producer.send(f"m{i}".encode()) for i in range(3)]
    producer.close()
    stats = http.get(f"{NS}/stats-{unique}/stats").json()
    assert stats["msgInCounter"] == 3
    assert stats["subscriptions"]["sub-a"]["msgBacklog"] == 3
    assert stats["storageSize"] > 0
    internal = http.get(f"{NS}/stats-{unique}/internalStats").json()
    assert internal["numberOfEntries"] == 3
    assert "sub-a" in internal["cursors"]
    last = http.get(f"{NS}/stats-{unique}/lastMessageId").json()
    assert (last["ledgerId"], last["entryId"]) == (ids[-1].ledger_id(), ids[-1].entry_id())
    assert last["partitionIndex"] == -1


def test_partitioned_stats_add_up_the_partitions(
        http: Http, client: pulsar.Client, unique: str) -> None:
    http.put(f"{NS}/pstats-{unique}/partitions", 2)
    producer = client.create_producer(f"persistent://public/default/pstats-{unique}",
                                      batching_enabled=False,
                                      message_routing_mode=pulsar.PartitionsRoutingMode.RoundRobinDistribution)
    for i in range(6):
        producer.send(f"m{i}".encode())
    producer.close()
    stats = http.get(f"{NS}/pstats-{unique}/partitioned-stats").json()
    assert stats["metadata"] == {"partitions": 2}
    assert stats["msgInCounter"] == 6
    assert sum(p["msgInCounter"] for p in stats["partitions"].values()) == 6
    assert http.get(f"{NS}/pstats-{unique}/lastMessageId").status == 405
    internal = http.get(f"{NS}/pstats-{unique}/partitioned-internalStats").json()
    assert internal["metadata"] == {"partitions": 2}
    assert sum(p["numberOfEntries"] for p in internal["partitions"].values()) == 6


def test_terminate_answers_the_last_message_id(http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/term-{unique}"
    producer = client.create_producer(topic)
    last_sent = producer.send(b"last")
    producer.close()
    reply = http.post(f"{NS}/term-{unique}/terminate")
    assert reply.status == 200
    assert (reply.json()["ledgerId"], reply.json()["entryId"]) == (
        last_sent.ledger_id(), last_sent.entry_id())


def test_unload_keeps_the_data(http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/unload-{unique}"
    client.subscribe(topic, "s").close()
    client.create_producer(topic).send(b"kept")
    assert http.put(f"{NS}/unload-{unique}/unload").status == 204
    assert http.get(f"{NS}/unload-{unique}/stats").json()["subscriptions"]["s"]["msgBacklog"] == 1
