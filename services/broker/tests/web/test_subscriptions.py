"""Subscriptions through REST: create at a position, skip, clear, reset, peek, delete."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pulsar
from pulsar_common.wire import batch

if TYPE_CHECKING:
    from conftest import Http

NS = "/admin/v2/persistent/public/default"


def _publish(client: pulsar.Client, topic: str, count: int, batched: bool = False) -> list[pulsar.MessageId]:
    producer = client.create_producer(topic, batching_enabled=batched,
                                      batching_max_publish_delay_ms=50)
    if batched:
        for i in range(count):
            producer.send_async(f"m{i}".encode(), None, properties={"i": str(i)})
        producer.flush()
        ids: list[pulsar.MessageId] = []
    else:
        ids = [producer.send(f"m{i}".encode(), properties={"i": str(i)}) for i in range(count)]
    producer.close()
    return ids


def _backlog(http: Http, topic: str, sub: str) -> int:
    return int(http.get(f"{NS}/{topic}/stats").json()["subscriptions"][sub]["msgBacklog"])


def test_subscription_created_at_earliest_sees_old_messages(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"early-{unique}"
    _publish(client, f"persistent://public/default/{topic}", 3)
    sub = f"{NS}/{topic}/subscription"
    assert http.put(f"{sub}/from-start", {"ledgerId": -1, "entryId": -1}).status == 204
    assert http.put(f"{sub}/from-now").status == 204
    conflict = http.put(f"{sub}/from-now")
    assert (conflict.status, conflict.reason) == (409, "Subscription already exists for topic")
    assert http.get(f"{NS}/{topic}/subscriptions").json() == ["from-now", "from-start"]
    assert _backlog(http, topic, "from-start") == 3
    assert _backlog(http, topic, "from-now") == 0
    consumer = client.subscribe(f"persistent://public/default/{topic}", "from-start")
    assert consumer.receive(10_000).data() == b"m0"
    consumer.close()


def test_skip_clear_backlog_and_reset_by_time(http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"skip-{unique}"
    full = f"persistent://public/default/{topic}"
    client.subscribe(full, "s").close()
    before = int(time.time() * 1000)
    _publish(client, full, 5)
    sub = f"{NS}/{topic}/subscription/s"
    assert http.post(f"{sub}/skip/2").status == 204
    assert _backlog(http, topic, "s") == 3
    assert http.post(f"{sub}/skip_all").status == 204
    assert _backlog(http, topic, "s") == 0
    assert http.post(f"{sub}/resetcursor/{before}").status == 204
    assert _backlog(http, topic, "s") == 5
    missing = http.post(f"{NS}/{topic}/subscription/nobody/skip_all")
    assert (missing.status, missing.reason) == (404, "Subscription not found")


def test_reset_cursor_by_message_id_redelivers_from_there(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"reset-{unique}"
    full = f"persistent://public/default/{topic}"
    client.subscribe(full, "s").close()
    ids = _publish(client, full, 4)
    http.post(f"{NS}/{topic}/subscription/s/skip_all")
    target = {"ledgerId": ids[2].ledger_id(), "entryId": ids[2].entry_id()}
    assert http.post(f"{NS}/{topic}/subscription/s/resetcursor", target).status == 204
    consumer = client.subscribe(full, "s")
    assert [consumer.receive(10_000).data() for _ in range(2)] == [b"m2", b"m3"]
    consumer.close()


def test_peek_returns_payload_and_apache_headers(http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"peek-{unique}"
    full = f"persistent://public/default/{topic}"
    client.subscribe(full, "s").close()
    ids = _publish(client, full, 2)
    reply = http.get(f"{NS}/{topic}/subscription/s/position/2")
    assert reply.status == 200
    assert reply.body == b"m1"
    assert reply.headers["X-Pulsar-Message-ID"] == f"{ids[1].ledger_id()}:{ids[1].entry_id()}"
    assert reply.headers["X-Pulsar-PROPERTY-i"] == "1"
    assert reply.headers["X-Pulsar-publish-time"].endswith("Z")
    assert http.get(f"{NS}/{topic}/subscription/s/position/3").status == 404


def test_peek_of_a_batch_returns_the_batch_for_the_client_to_split(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"peekb-{unique}"
    full = f"persistent://public/default/{topic}"
    client.subscribe(full, "s").close()
    _publish(client, full, 3, batched=True)
    reply = http.get(f"{NS}/{topic}/subscription/s/position/1")
    count = int(reply.headers["X-Pulsar-num-batch-message"])
    messages = batch.unpack_batch(reply.body, count)
    assert [m.payload for m in messages] == [b"m0", b"m1", b"m2"][:count]


def test_unsubscribe_refuses_connected_consumers_unless_forced(
        http: Http, client: pulsar.Client, unique: str) -> None:
    full = f"persistent://public/default/unsub-{unique}"
    consumer = client.subscribe(full, "busy")
    path = f"{NS}/unsub-{unique}/subscription/busy"
    assert http.delete(path).status == 412
    assert http.call("DELETE", path + "?force=true").status == 204
    assert http.get(f"{NS}/unsub-{unique}/subscriptions").json() == []
    consumer.close()


def test_partitioned_topic_subscription_is_created_on_every_partition(
        http: Http, unique: str) -> None:
    http.put(f"{NS}/psub-{unique}/partitions", 3)
    assert http.put(f"{NS}/psub-{unique}/subscription/all").status == 204
    for index in range(3):
        subs = http.get(f"{NS}/psub-{unique}-partition-{index}/subscriptions").json()
        assert subs == ["all"]
    assert http.delete(f"{NS}/psub-{unique}/subscription/all").status == 204
    assert http.get(f"{NS}/psub-{unique}/subscriptions").json() == []


def test_message_by_id_returns_that_entry(http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"byid-{unique}"
    ids = _publish(client, f"persistent://public/default/{topic}", 3)
    wanted = ids[1]
    reply = http.get(f"{NS}/{topic}/ledger/{wanted.ledger_id()}/entry/{wanted.entry_id()}")
    assert (reply.status, reply.body) == (200, b"m1")
    assert reply.headers["X-Pulsar-Message-ID"] == f"{wanted.ledger_id()}:{wanted.entry_id()}"
    beyond = http.get(f"{NS}/{topic}/ledger/{wanted.ledger_id()}/entry/99")
    assert beyond.status == 404


def test_namespace_clear_backlog_and_unsubscribe(
        http: Http, client: pulsar.Client, unique: str) -> None:
    ns = f"public/clear-{unique}"
    http.put(f"/admin/v2/namespaces/{ns}")
    for name in ("one", "two"):
        topic = f"persistent://{ns}/{name}"
        client.subscribe(topic, "keep").close()
        client.subscribe(topic, "drop").close()
        _publish(client, topic, 2)
    assert http.post(f"/admin/v2/namespaces/{ns}/clearBacklog/drop").status == 204
    stats = http.get(f"/admin/v2/persistent/{ns}/one/stats").json()["subscriptions"]
    assert (stats["keep"]["msgBacklog"], stats["drop"]["msgBacklog"]) == (2, 0)
    assert http.post(f"/admin/v2/namespaces/{ns}/unsubscribe/drop").status == 204
    for name in ("one", "two"):
        assert http.get(f"/admin/v2/persistent/{ns}/{name}/subscriptions").json() == ["keep"]
    assert http.post(f"/admin/v2/namespaces/{ns}/clearBacklog").status == 204
    assert http.get(f"/admin/v2/persistent/{ns}/two/stats").json()[
        "subscriptions"]["keep"]["msgBacklog"] == 0


def test_expire_messages_acknowledges_what_is_older_than_the_limit(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"expire-{unique}"
    full = f"persistent://public/default/{topic}"
    client.subscribe(full, "s").close()
    _publish(client, full, 3)
    sub = f"{NS}/{topic}/subscription/s"
    assert http.post(f"{sub}/expireMessages/3600").status == 204
    assert _backlog(http, topic, "s") == 3
    assert http.post(f"{sub}/expireMessages/0").status == 204
    assert _backlog(http, topic, "s") == 0
