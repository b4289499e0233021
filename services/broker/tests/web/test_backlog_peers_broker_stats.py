"""Admin routes of issue 15: a topic's backlog size from a message id, a subscription's
backlog analysis, a cluster's peer clusters and the broker's topic stats dump."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pulsar
from pulsar_broker.security import http_rules

if TYPE_CHECKING:
    from conftest import Http

NS = "/admin/v2/persistent/public/default"


def _publish(client: pulsar.Client, topic: str, payloads: list[bytes]) -> list[pulsar.MessageId]:
    producer = client.create_producer(f"persistent://public/default/{topic}",
                                      batching_enabled=False)
    ids = [producer.send(payload) for payload in payloads]
    producer.close()
    return ids


def test_backlog_size_counts_the_bytes_stored_after_a_message_id(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"backlog-size-{unique}"
    ids = _publish(client, topic, [b"x" * 100] * 4)
    whole = http.put(f"{NS}/{topic}/backlogSize", {"ledgerId": -1, "entryId": -1})
    assert whole.status == 200
    total = whole.json()
    assert total == http.get(f"{NS}/{topic}/stats").json()["storageSize"] > 0
    after_second = http.put(f"{NS}/{topic}/backlogSize", {
        "ledgerId": ids[1].ledger_id(), "entryId": ids[1].entry_id()}).json()
    assert after_second == total // 2
    after_last = http.put(f"{NS}/{topic}/backlogSize", {
        "ledgerId": ids[3].ledger_id(), "entryId": ids[3].entry_id()}).json()
    assert after_last == 0


def test_backlog_size_refuses_a_partitioned_and_a_missing_topic(http: Http, unique: str) -> None:
    assert http.put(f"{NS}/parted-{unique}/partitions", 2).status == 204
    parted = http.put(f"{NS}/parted-{unique}/backlogSize", {"ledgerId": -1, "entryId": -1})
    assert (parted.status, parted.reason) == (
        405, "calculate backlog size is not allowed for partitioned-topic")
    assert http.put(f"{NS}/missing-{unique}/backlogSize", {"ledgerId": -1, "entryId": -1}
                    ).status == 404


def test_analyze_backlog_counts_the_unacknowledged_entries_and_messages(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"analyze-{unique}"
    consumer = client.subscribe(f"persistent://public/default/{topic}", "sub",
                                initial_position=pulsar.InitialPosition.Earliest)
    ids = _publish(client, topic, [b"a", b"b", b"c", b"d"])
    consumer.acknowledge(consumer.receive(timeout_millis=10_000))
    second = consumer.receive(timeout_millis=10_000)
    third = consumer.receive(timeout_millis=10_000)
    consumer.acknowledge(third)  # an individual ack: a hole after the mark-delete position
    consumer.close()
    analyzed = http.post(f"{NS}/{topic}/subscription/sub/analyzeBacklog")
    assert analyzed.status == 200
    result = analyzed.json()
    assert result == {
        "entries": 2, "messages": 2, "filterRejectedEntries": 0, "filterAcceptedEntries": 2,
        "filterRescheduledEntries": 0, "filterRejectedMessages": 0,
        "filterAcceptedMessages": 2, "filterRescheduledMessages": 0, "aborted": False,
        "firstMessageId": f"{second.message_id().ledger_id()}:{second.message_id().entry_id()}",
        "lastMessageId": f"{ids[3].ledger_id()}:{ids[3].entry_id()}"}
    from_last = http.post(f"{NS}/{topic}/subscription/sub/analyzeBacklog",
                          {"ledgerId": ids[3].ledger_id(), "entryId": ids[3].entry_id()}).json()
    assert (from_last["entries"], from_last["firstMessageId"]) == (
        1, f"{ids[3].ledger_id()}:{ids[3].entry_id()}")


def test_analyze_backlog_counts_each_message_of_a_batch(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/analyze-batch-{unique}"
    client.subscribe(topic, "sub").close()
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=50)
    for i in range(3):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    producer.close()
    result = http.post(f"{NS}/analyze-batch-{unique}/subscription/sub/analyzeBacklog").json()
    assert (result["entries"], result["messages"]) == (1, 3)


def test_analyze_backlog_of_an_unknown_subscription_or_a_partitioned_topic_is_refused(
        http: Http, client: pulsar.Client, unique: str) -> None:
    _publish(client, f"analyze-none-{unique}", [b"a"])
    assert http.post(f"{NS}/analyze-none-{unique}/subscription/nope/analyzeBacklog"
                     ).status == 404
    assert http.put(f"{NS}/analyze-parted-{unique}/partitions", 2).status == 204
    assert http.post(f"{NS}/analyze-parted-{unique}/subscription/s/analyzeBacklog"
                     ).status == 405


def test_peer_clusters_are_set_read_and_validated(http: Http, unique: str) -> None:
    base = "/admin/v2/clusters"
    for name in (f"a-{unique}", f"b-{unique}"):
        assert http.put(f"{base}/{name}", {"serviceUrl": "http://localhost:8080"}).status == 204
    assert http.get(f"{base}/a-{unique}/peers").status == 204
    assert http.post(f"{base}/a-{unique}/peers", [f"b-{unique}"]).status == 204
    assert http.get(f"{base}/a-{unique}/peers").json() == [f"b-{unique}"]
    assert http.get(f"{base}/a-{unique}").json()["peerClusterNames"] == [f"b-{unique}"]
    itself = http.post(f"{base}/a-{unique}/peers", [f"a-{unique}"])
    assert (itself.status, itself.reason) == (412, f"a-{unique} itself can't be part of peer-list")
    missing = http.post(f"{base}/a-{unique}/peers", [f"c-{unique}"])
    assert (missing.status, missing.reason) == (412, f"Peer cluster c-{unique} does not exist")
    assert http.get(f"{base}/c-{unique}/peers").status == 404
    assert http.post(f"{base}/c-{unique}/peers", []).status == 404
    assert http.post(f"{base}/a-{unique}/peers").status == 204
    assert http.get(f"{base}/a-{unique}/peers").status == 204
    for name in (f"a-{unique}", f"b-{unique}"):
        assert http.delete(f"{base}/{name}").status == 204


def test_broker_stats_topics_dumps_each_served_topic_by_namespace_and_bundle(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"persistent://public/default/dumped-{unique}"
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic)
    producer.send(b"hello")
    reply = http.get("/admin/v2/broker-stats/topics")
    producer.close()
    consumer.close()
    assert reply.status == 200
    bundles = reply.json()["public/default"]
    found = [by_domain["persistent"][topic] for by_domain in bundles.values()
             if topic in by_domain.get("persistent", {})]
    assert len(found) == 1
    stats = found[0]
    assert stats["producerCount"] == 1 and len(stats["publishers"]) == 1
    assert stats["msgInCount"] == 1 and stats["storageSize"] > 0
    assert stats["subscriptions"]["sub"]["type"] == "Exclusive"
    assert len(stats["subscriptions"]["sub"]["consumers"]) == 1
    bundle_range = next(b for b, d in bundles.items() if topic in d.get("persistent", {}))
    assert bundle_range.startswith("0x") and "_0x" in bundle_range


def test_backlog_quota_check_evicts_a_backlog_over_its_quota_now(
        http: Http, client: pulsar.Client, unique: str) -> None:
    # The session's standalone checks quotas every 60 s only: the route does it at once.
    ns = f"public/quota-check-{unique}"
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 204
    assert http.post(f"/admin/v2/namespaces/{ns}/backlogQuota", {
        "limitSize": 1000, "policy": "consumer_backlog_eviction"}).status == 204
    topic = f"persistent://{ns}/evict"
    client.subscribe(topic, "slow").close()
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(20):
        producer.send(b"x" * 100)
    producer.close()
    stats_path = f"/admin/v2/persistent/{ns}/evict/stats"
    assert http.get(stats_path).json()["backlogSize"] > 1000
    assert http.get("/admin/v2/brokers/backlog-quota-check").status == 204
    assert http.get(stats_path).json()["backlogSize"] <= 900


def test_topic_lists_leave_system_topics_out_unless_asked_and_filter_by_bundle(
        http: Http, unique: str) -> None:
    ns = f"public/list-{unique}"
    assert http.put(f"/admin/v2/namespaces/{ns}", {"bundles": {"numBundles": 4}}).status == 204
    base = f"/admin/v2/persistent/{ns}"
    for topic in ("__change_events", "plain-a", "plain-b", "plain-c"):
        assert http.put(f"{base}/{topic}").status == 204
    assert http.put(f"{base}/__transaction_buffer_snapshot/partitions", 1).status == 204
    assert http.put(f"{base}/parted/partitions", 1).status == 204
    plain = [f"persistent://{ns}/plain-{x}" for x in "abc"]
    assert http.get(base).json() == [f"persistent://{ns}/parted-partition-0", *plain]
    with_system = http.get(f"{base}?includeSystemTopic=true").json()
    assert f"persistent://{ns}/__change_events" in with_system
    assert http.get(f"{base}/partitioned").json() == [f"persistent://{ns}/parted"]
    assert f"persistent://{ns}/__transaction_buffer_snapshot" in http.get(
        f"{base}/partitioned?includeSystemTopic=true").json()
    by_bundle: list[str] = []
    bundles = http.get(f"/admin/v2/namespaces/{ns}/bundles").json()["boundaries"]
    for lower, upper in zip(bundles, bundles[1:], strict=False):
        by_bundle += http.get(f"{base}?bundle={lower}_{upper}").json()
    assert sorted(by_bundle) == http.get(base).json()
    assert http.get(f"{base}?bundle=0x00000000_0x00000001").json() == []


def test_monitoring_metrics_sum_each_namespace_of_served_topics(
        http: Http, client: pulsar.Client, unique: str) -> None:
    ns = f"public/metrics-{unique}"
    assert http.put(f"/admin/v2/namespaces/{ns}").status == 204
    for topic in ("a", "b"):
        client.subscribe(f"persistent://{ns}/{topic}", "sub").close()
        producer = client.create_producer(f"persistent://{ns}/{topic}", batching_enabled=False)
        producer.send(b"one")
        producer.send(b"two")
    reply = http.get("/admin/v2/broker-stats/metrics")
    assert reply.status == 200
    mine = [m for m in reply.json() if m["dimensions"] == {"namespace": ns}]
    assert len(mine) == 1
    metrics = mine[0]["metrics"]
    assert metrics["brk_no_of_producers"] == 2
    assert metrics["brk_no_of_subscriptions"] == 2
    assert metrics["brk_no_of_consumers"] == 0
    assert metrics["brk_msg_backlog"] == 4
    assert metrics["brk_storage_size"] > 0
    assert metrics["brk_no_of_replicators"] == metrics["brk_replication_backlog"] == 0


def test_health_check_takes_either_heartbeat_topic_version(http: Http) -> None:
    for version in ("V1", "V2"):
        reply = http.get(f"/admin/v2/brokers/health?topicVersion={version}")
        assert (reply.status, reply.body) == (200, b"ok")
    assert http.get("/admin/v2/brokers/health?topicVersion=V3").status == 400


def test_expiring_on_all_subscriptions_acknowledges_old_messages_everywhere(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"expire-all-{unique}"
    assert http.put(f"{NS}/{topic}/partitions", 2).status == 204
    for sub in ("one", "two"):
        client.subscribe(f"persistent://public/default/{topic}", sub).close()
    producer = client.create_producer(f"persistent://public/default/{topic}",
                                      batching_enabled=False)
    for i in range(4):
        producer.send(f"m{i}".encode())
    producer.close()

    def backlogs() -> dict[str, int]:
        subs = http.get(f"{NS}/{topic}/partitioned-stats").json()["subscriptions"]
        return {name: sub["msgBacklog"] for name, sub in subs.items()}

    assert backlogs() == {"one": 4, "two": 4}
    # Published within the last hour: nothing is that old yet.
    assert http.post(f"{NS}/{topic}/all_subscription/expireMessages/3600").status == 204
    assert backlogs() == {"one": 4, "two": 4}
    assert http.post(f"{NS}/{topic}/all_subscription/expireMessages/0").status == 204
    assert backlogs() == {"one": 0, "two": 0}


def test_backlog_routes_need_consume_and_broker_routes_a_superuser() -> None:
    topic = "/admin/v2/{domain:persistent|non-persistent}/{tenant}/{namespace}/{topic}"
    for method, suffix in (("PUT", "/backlogSize"),
                           ("POST", "/subscription/{subscription}/analyzeBacklog"),
                           ("POST", "/all_subscription/expireMessages/{seconds}")):
        assert http_rules.rule_for(method, topic + suffix, "") == http_rules.CONSUME
    for method, route in (("GET", "/admin/v2/brokers/backlog-quota-check"),
                          ("GET", "/admin/v2/broker-stats/topics"),
                          ("GET", "/admin/v2/broker-stats/metrics"),
                          ("POST", "/admin/v2/clusters/{cluster}/peers")):
        assert http_rules.rule_for(method, route, route) == http_rules.SUPERUSER


def test_expiring_up_to_a_message_id_acknowledges_it_and_those_before(
        http: Http, client: pulsar.Client, unique: str) -> None:
    topic = f"expire-to-{unique}"
    client.subscribe(f"persistent://public/default/{topic}", "sub").close()
    ids = _publish(client, topic, [b"a", b"b", b"c", b"d"])
    path = f"{NS}/{topic}/subscription/sub/expireMessages"

    def backlog() -> int:
        return int(http.get(f"{NS}/{topic}/stats").json()["subscriptions"]["sub"]["msgBacklog"])

    beyond = {"ledgerId": ids[3].ledger_id(), "entryId": ids[3].entry_id() + 5}
    assert http.post(path, beyond).status == 204
    assert backlog() == 4
    second = {"ledgerId": ids[1].ledger_id(), "entryId": ids[1].entry_id()}
    assert http.post(path, second).status == 204
    assert backlog() == 2
    assert http.post(path).status == 400
    assert http.put(f"{NS}/expire-to-parted-{unique}/partitions", 2).status == 204
    parted = http.post(f"{NS}/expire-to-parted-{unique}/subscription/sub/expireMessages", second)
    assert (parted.status, parted.reason) == (
        405, "Expire message at position is not supported for partitioned-topic")
